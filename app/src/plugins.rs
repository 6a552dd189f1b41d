//! The Plugins page (`/plugins`, DESIGN §2 "gate": "Shown in the Plugins panel"): one table per
//! loaded plugin with each tool's effect, its gate and its undo, so the owner can see which
//! calls run by themselves and which wait for a per-call approval. Read-only; any signed-in
//! device may look. At phone width each row becomes a small labelled block (see `iris.css`).

use iris_core::wire::{Effect, PluginInfo, PluginList, PluginTool, ServerHints, ToolGate};
use leptos::prelude::*;

use crate::api::load_plugins;
use crate::shape::any;

/// The words and badge class of an effect.
pub fn effect_badge(effect: Effect) -> (&'static str, &'static str) {
    match effect {
        Effect::Read => ("Read", "badge badge-effect effect-read"),
        Effect::Write => ("Write", "badge badge-effect effect-write"),
        Effect::Destructive => ("Destructive", "badge badge-effect effect-destructive"),
    }
}

/// The words and badge class of a gate. `approval` reads "Approved per call".
pub fn gate_badge(gate: ToolGate) -> (&'static str, &'static str) {
    match gate {
        ToolGate::None => ("Runs without asking", "badge badge-gate gate-none"),
        ToolGate::Confirm => ("Confirm once", "badge badge-gate gate-confirm"),
        ToolGate::Approval => ("Approved per call", "badge badge-gate gate-approval"),
    }
}

/// What an MCP server's own annotations say, in words ("read-only", "destructive, idempotent",
/// "no hints").
pub fn hint_words(hints: ServerHints) -> String {
    let mut words = Vec::new();
    match (hints.read_only, hints.destructive) {
        (Some(true), _) => words.push("read-only"),
        (_, Some(true)) => words.push("destructive"),
        (_, Some(false)) => words.push("not destructive"),
        _ => {}
    }
    if hints.idempotent == Some(true) {
        words.push("idempotent");
    }
    if hints.open_world == Some(true) {
        words.push("reaches the internet");
    }
    if words.is_empty() {
        "no hints".to_owned()
    } else {
        words.join(", ")
    }
}

/// "30 days", "1 day".
fn days(n: u32) -> String {
    if n == 1 {
        "1 day".to_owned()
    } else {
        format!("{n} days")
    }
}

/// The Plugins page: fetches the list once and shows [`PluginTables`].
#[component]
pub fn PluginsPage() -> impl IntoView {
    let data =
        Resource::<_, crate::codec::PageJson>::new_with_options(|| (), |()| load_plugins(), false);
    any(view! {
        <div class="plugins-page" data-testid="plugins-page">
            <Transition fallback=|| any(view! { <p class="page-note">"Loading…"</p> })>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(list) => any(view! { <PluginTables list/> }),
                        Err(e) => any(view! {
                            <div class="page-error" role="alert" data-testid="page-error">
                                <p>{e.to_string()}</p>
                            </div>
                        }),
                    }
                })}
            </Transition>
        </div>
    })
}

/// The heading, the legend and one table per plugin.
#[component]
pub fn PluginTables(
    /// What `GET /api/plugins` returns.
    list: PluginList,
) -> impl IntoView {
    let empty = list.plugins.is_empty();
    any(view! {
        <h1 class="section-title">"Plugins"</h1>
        <p class="plugins-intro">
            "What each tool may do. A tool marked "
            <span class="badge badge-gate gate-approval">"Approved per call"</span>
            " never runs on its own: every call waits for you on a card, and only that exact call runs."
        </p>
        {empty.then(|| any(view! { <p class="empty">"No plugins are loaded."</p> }))}
        {list.plugins.into_iter().map(plugin_table).collect_view()}
    })
}

/// One plugin's table.
fn plugin_table(plugin: PluginInfo) -> impl IntoView {
    let PluginInfo {
        name,
        tools,
        mcp_path,
        status,
    } = plugin;
    // What the plugin says of its state now (e.g. a folder's quarantine size).
    let status = (!status.is_empty()).then(|| {
        any(view! {
            <ul class="plugin-status" data-testid="plugin-status">
                {status.into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}
            </ul>
        })
    });
    let upstream = mcp_path.map(|path| {
        any(view! {
            <p class="plugin-upstream" data-testid="plugin-upstream">
                "An MCP server behind IRIS. Agents connect at "<code>{path}</code>
                ". Its own hints are shown beside IRIS's effect; only IRIS's manifest decides."
            </p>
        })
    });
    let heading_id = format!("plugin-{name}-title");
    let labelled_by = heading_id.clone();
    let count = tools.len();
    let tools_word = if count == 1 { "tool" } else { "tools" };
    any(view! {
        <section class="plugin" data-testid=format!("plugin-{name}") aria-labelledby=labelled_by>
            <h3 class="plugin-name" id=heading_id>
                <code>{name.clone()}</code>
                <span class="plugin-count">{format!("{count} {tools_word}")}</span>
            </h3>
            {upstream}
            {status}
            <table class="tools-table" data-testid="plugin-table">
                <thead>
                    <tr>
                        <th scope="col">"Tool"</th>
                        <th scope="col">"Effect"</th>
                        <th scope="col">"Gate"</th>
                        <th scope="col">"Undo"</th>
                    </tr>
                </thead>
                <tbody>{tools.into_iter().map(tool_row).collect_view()}</tbody>
            </table>
        </section>
    })
}

/// One tool's row. Each cell carries `data-label` for the stacked phone layout.
fn tool_row(tool: PluginTool) -> impl IntoView {
    let (effect_words, effect_class) = effect_badge(tool.effect);
    let (gate_words, gate_class) = gate_badge(tool.gate);
    let undo = match (&tool.undo, tool.undo_window_days) {
        (Some(undo), window) => any(view! {
            <code class="undo-tool" data-testid="undo-tool">{undo.clone()}</code>
            {window.map(|d| any(view! {
                <span class="undo-window" data-testid="undo-window">{format!("within {}", days(d))}</span>
            }))}
        }),
        // A write without a card whose reply offers "undo that" (DESIGN §4 keeps `undo` on
        // destructive tools; this is what the owner is told after it ran).
        (None, _) => match &tool.reply_undo {
            Some(undo) => any(view! {
                <span class="reply-undo" data-testid="reply-undo">
                    "in its reply ("<code class="undo-tool">{undo.clone()}</code>")"
                </span>
            }),
            None => any(view! { <span class="no-undo">"No undo"</span> }),
        },
    };
    let aliases = (!tool.aliases.is_empty()).then(|| {
        any(view! {
            <p class="tool-aliases">
                <span class="label">"Also answers to: "</span>
                {tool.aliases.join(", ")}
            </p>
        })
    });
    // An upstream's tool describes itself (its server's words); the assistant's are IRIS's.
    let told = if tool.server_hints.is_some() {
        "What the server says it does"
    } else {
        "What the assistant is told"
    };
    let description = (!tool.description.trim().is_empty()).then(|| {
        any(view! {
            <details class="tool-more">
                <summary>{told}</summary>
                <p>{tool.description.clone()}</p>
            </details>
        })
    });
    let server_says = tool.server_hints.map(|hints| {
        any(view! {
            <span class="server-hints" data-testid="server-hints">
                {format!("Server says: {}", hint_words(hints))}
            </span>
        })
    });
    let row_class = if tool.approved_per_call {
        "tool-row per-call"
    } else {
        "tool-row"
    };
    any(view! {
        <tr
            class=row_class
            data-testid=format!("tool-{}", tool.name)
            data-effect=tool.effect.as_str()
            data-gate=tool.gate.as_str()
        >
            <th scope="row" class="tool-cell" data-label="Tool">
                <code class="tool-name">{tool.name.clone()}</code>
                {aliases}
                {description}
            </th>
            <td data-label="Effect">
                <span class=effect_class data-testid="tool-effect">{effect_words}</span>
                {server_says}
            </td>
            <td data-label="Gate">
                <span class=gate_class data-testid="tool-gate">{gate_words}</span>
            </td>
            <td data-label="Undo" class="undo-cell">{undo}</td>
        </tr>
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    fn tool(name: &str, effect: Effect, gate: ToolGate) -> PluginTool {
        PluginTool {
            name: name.into(),
            description: format!("{name} does things <safely>"),
            effect,
            gate,
            approved_per_call: gate == ToolGate::Approval,
            undo: None,
            undo_window_days: None,
            reply_undo: None,
            aliases: Vec::new(),
            server_hints: None,
        }
    }

    fn email() -> PluginList {
        let mut trash = tool("trash_email", Effect::Destructive, ToolGate::Approval);
        trash.undo = Some("restore_email".into());
        trash.undo_window_days = Some(30);
        trash.aliases = vec!["delete_email".into(), "remove_email".into()];
        let mut category = tool("trash_category", Effect::Write, ToolGate::None);
        category.reply_undo = Some("restore_email".into());
        PluginList {
            plugins: vec![
                PluginInfo {
                    name: "email".into(),
                    tools: vec![
                        tool("search_inbox", Effect::Read, ToolGate::None),
                        trash,
                        category,
                        tool("restore_email", Effect::Write, ToolGate::None),
                    ],
                    mcp_path: None,
                    status: Vec::new(),
                },
                PluginInfo {
                    name: "notes".into(),
                    tools: vec![tool("draft_note", Effect::Write, ToolGate::Confirm)],
                    mcp_path: None,
                    status: Vec::new(),
                },
            ],
        }
    }

    fn render(list: PluginList) -> String {
        Owner::new().with(|| view! { <PluginTables list/> }.to_html())
    }

    /// The `<tr>` of one tool, for assertions about that row only.
    fn row<'a>(html: &'a str, tool: &str) -> &'a str {
        let start = html
            .find(&format!("data-testid=\"tool-{tool}\""))
            .unwrap_or_else(|| panic!("no row for {tool}: {html}"));
        let end = html[start..].find("</tr>").unwrap() + start;
        &html[start..end]
    }

    #[test]
    fn one_table_per_plugin_with_effect_gate_and_undo() {
        let html = render(email());
        assert_eq!(html.matches("<table ").count(), 2, "{html}");
        assert_eq!(html.matches("class=\"tools-table\"").count(), 2, "{html}");
        assert!(html.contains("data-testid=\"plugin-email\""), "{html}");
        assert!(html.contains("data-testid=\"plugin-notes\""), "{html}");
        assert!(html.contains("4 tools"), "{html}");
        assert!(html.contains("1 tool<"), "{html}");

        let trash = row(&html, "trash_email");
        assert!(trash.contains("data-effect=\"destructive\""), "{trash}");
        assert!(trash.contains("data-gate=\"approval\""), "{trash}");
        assert!(trash.contains("Destructive"), "{trash}");
        assert!(trash.contains("Approved per call"), "{trash}");
        assert!(trash.contains("gate-approval"), "{trash}");
        assert!(trash.contains("per-call"), "{trash}");
        assert!(trash.contains(">restore_email<"), "{trash}");
        assert!(trash.contains("within 30 days"), "{trash}");
        assert!(trash.contains("delete_email, remove_email"), "{trash}");

        let search = row(&html, "search_inbox");
        assert!(search.contains("data-effect=\"read\""), "{search}");
        assert!(search.contains("Runs without asking"), "{search}");
        assert!(search.contains("No undo"), "{search}");
        assert!(!search.contains("Approved per call"), "{search}");
        assert!(!search.contains("per-call"), "{search}");

        let category = row(&html, "trash_category");
        assert!(
            category.contains("in its reply (<code class=\"undo-tool\">restore_email</code>)"),
            "{category}"
        );
        assert!(!category.contains("No undo"), "{category}");

        let draft = row(&html, "draft_note");
        assert!(draft.contains("Confirm once"), "{draft}");
        // Manifest text is escaped, never markup.
        assert!(html.contains("does things &lt;safely&gt;"), "{html}");
        // Every cell is labelled for the stacked phone layout.
        for label in ["Tool", "Effect", "Gate", "Undo"] {
            assert!(
                trash.contains(&format!("data-label=\"{label}\"")),
                "{trash}"
            );
        }
    }

    #[test]
    fn an_mcp_upstream_shows_where_agents_connect_and_the_servers_hints_beside_iris_effect() {
        let mut write = tool("files.write_file", Effect::Destructive, ToolGate::Approval);
        // The server calls it harmless; IRIS's manifest says destructive, and that is what
        // decides: both are shown.
        write.server_hints = Some(ServerHints {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: None,
        });
        let mut read = tool("files.read_text_file", Effect::Read, ToolGate::None);
        read.server_hints = Some(ServerHints::default());
        let html = render(PluginList {
            plugins: vec![PluginInfo {
                name: "files".into(),
                tools: vec![read, write],
                mcp_path: Some("/mcp/files".into()),
                status: Vec::new(),
            }],
        });
        assert!(
            html.contains("Agents connect at <code>/mcp/files</code>"),
            "{html}"
        );
        let write_row = row(&html, "files.write_file");
        assert!(write_row.contains(">Destructive<"), "{write_row}");
        assert!(
            write_row.contains("Server says: not destructive, idempotent"),
            "{write_row}"
        );
        assert!(row(&html, "files.read_text_file").contains("Server says: no hints"));
        assert!(
            write_row.contains("What the server says it does"),
            "{write_row}"
        );
        // The assistant's own plugins have no server hints.
        assert!(!render(email()).contains("Server says"));
    }

    #[test]
    fn no_plugins_says_so() {
        let html = render(PluginList::default());
        assert!(html.contains("No plugins are loaded."), "{html}");
        assert!(!html.contains("<table"), "{html}");
    }
}
