//! The Devices page (`/devices`, Devices, sessions, scopes): every live device with
//! its scope, when it was paired and when it was last used. A control device may revoke one
//! (after a second tap that says what revoking does) and make a one-time pairing link for a new
//! browser; a read device only looks. Revoking ends that device's token and browser sessions
//! at their next request (`server/src/auth.rs`).

use iris_core::wire::{DeviceInfo, DeviceScope, PairingOffer};
use leptos::prelude::*;

use crate::api::{load_devices, make_pairing_link, revoke_device, DevicesSnapshot};
use crate::format::format_time;
use crate::live::clock_offset;
use crate::shape::{any, flag, part, text};

/// "Read" / "Control" / "Agent" and the badge class.
pub fn scope_badge(scope: DeviceScope) -> (&'static str, &'static str) {
    match scope {
        DeviceScope::Read => ("Read", "badge badge-scope scope-read"),
        DeviceScope::Control => ("Control", "badge badge-scope scope-control"),
        DeviceScope::Agent => ("Agent", "badge badge-scope scope-read"),
    }
}

/// What revoking `device` does, in plain words (the confirm line); `last_control` when it is
/// the only live control device (then nobody could answer cards afterwards).
pub fn revoke_warning(device: &DeviceInfo, last_control: bool) -> String {
    let warning = revoke_consequence(device);
    if last_control {
        format!(
            "{warning} It is the last control device: nobody can answer cards until you run iris pair --scope control on the server."
        )
    } else {
        warning
    }
}

/// What revoking `device` does to that device (a read device never answered cards).
fn revoke_consequence(device: &DeviceInfo) -> String {
    if device.this_device {
        format!(
            "Revoke “{}”? This is the browser you are using: it will be signed out at once and need a new pairing link.",
            device.name
        )
    } else {
        let stops = match device.scope {
            DeviceScope::Read => "seeing cards",
            DeviceScope::Control => "seeing and answering cards",
            DeviceScope::Agent => "calling tools through IRIS",
        };
        format!(
            "Revoke “{}”? It will stop {stops} at once; pairing it again needs a new link.",
            device.name
        )
    }
}

/// The Devices page.
#[component]
pub fn DevicesPage() -> impl IntoView {
    let refresh = RwSignal::new(0_u64);
    let data = Resource::<_, crate::codec::PageJson>::new_with_options(
        move || refresh.get(),
        |_| load_devices(),
        false,
    );
    // Read by the push control's effect only (in the browser, once the data has come).
    let push_off = Memo::new(move |_| data.get().and_then(|r| r.ok()).map(|d| d.push_off));
    any(view! {
        <div class="devices-page" data-testid="devices-page">
            <h1 class="section-title">"Devices"</h1>
            <Transition fallback=|| any(view! { <p class="page-note">"Loading…"</p> })>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(snapshot) => any(view! { <DeviceList snapshot refresh/> }),
                        Err(e) => any(view! {
                            <div class="page-error" role="alert" data-testid="page-error">
                                <p>{e.to_string()}</p>
                            </div>
                        }),
                    }
                })}
            </Transition>
            <crate::push::PushControl server_off=push_off/>
        </div>
    })
}

/// The list of devices and, for a control device, the pairing panel.
#[component]
fn DeviceList(
    /// Who is looking and the devices.
    snapshot: DevicesSnapshot,
    /// Bumped to reload the list after a change.
    refresh: RwSignal<u64>,
) -> impl IntoView {
    let can_manage = snapshot.viewer.can_answer;
    let intro = if can_manage {
        "Every paired browser, phone and CLI token. A read device sees cards but never answers; a control device answers them."
    } else {
        "Every paired device. This device can only view: revoking and pairing need a control device."
    };
    let controls = snapshot
        .devices
        .iter()
        .filter(|d| d.scope == DeviceScope::Control)
        .count();
    let rows = snapshot
        .devices
        .into_iter()
        .map(|device| {
            let last_control = controls == 1 && device.scope == DeviceScope::Control;
            any(view! { <DeviceRow device can_manage last_control refresh/> })
        })
        .collect_view();
    any(view! {
        <p class="plugins-intro">{intro}</p>
        <ul class="device-list" data-testid="device-list">{rows}</ul>
        {can_manage.then(|| any(view! { <PairPanel/> }))}
        <crate::passkeys::PasskeyPanel can_manage/>
    })
}

/// One device: name, scope badge, paired and last-used times, and its revoke control.
#[component]
fn DeviceRow(
    device: DeviceInfo,
    can_manage: bool,
    last_control: bool,
    refresh: RwSignal<u64>,
) -> impl IntoView {
    let offset = clock_offset();
    let (scope_text, scope_class) = scope_badge(device.scope);
    let confirming = RwSignal::new(false);
    // The revoke control's two states, drawn by a closure over this memo (the app's one shape
    // for parts shown on a condition, crate's docs).
    let asking = Memo::new(move |_| confirming.get());
    let error = RwSignal::new(None::<String>);
    let name = device.name.clone();
    let revoke = Action::new(move |name: &String| {
        let name = name.clone();
        async move { revoke_device(name).await }
    });
    let this_device = device.this_device;
    // The demo's owner cannot be revoked while the demo runs: say so instead of offering it.
    let can_revoke = can_manage && !device.demo_owner;
    let demo_owner = device.demo_owner;
    crate::shape::effect(move || {
        if let Some(result) = revoke.value().get() {
            match result {
                Ok(()) => {
                    confirming.set(false);
                    if this_device {
                        // Signed out: the whole app must show it, not just this list.
                        #[cfg(feature = "hydrate")]
                        if let Some(w) = web_sys::window() {
                            let _ = w.location().reload();
                        }
                    }
                    refresh.update(|n| *n += 1);
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        }
    });
    let created = device.created_at;
    let last = device.last_used_at;
    let warning = revoke_warning(&device, last_control);
    let row_name = device.name.clone();
    any(view! {
        <li class="device-row" data-testid="device-row" data-device=row_name>
            <div class="device-head">
                <span class="device-name">{device.name.clone()}</span>
                <span class=scope_class>{scope_text}</span>
                {this_device.then(|| any(view! { <span class="badge badge-this">"This device"</span> }))}
                {(device.notified > 0).then(|| any(view! {
                    <span class="badge badge-notified" data-testid="device-notified">"Notifications on"</span>
                }))}
            </div>
            <p class="device-times">
                "Paired " {text(move || format_time(created, offset.get()))}
                " · last used "
                {text(move || last.map(|t| format_time(t, offset.get())).unwrap_or_else(|| "never".into()))}
            </p>
            {demo_owner.then(|| any(view! {
                <p class="device-note" data-testid="demo-owner-note">
                    "The demo’s owner: every browser of the demo signs in as it, so it stays while the demo runs."
                </p>
            }))}
            {can_revoke.then(|| any(view! {
                <div class="device-actions">
                    {move || {
                        if !asking.get() {
                            return any(view! {
                                <button class="btn btn-quiet" type="button"
                                    on:click=move |_| { error.set(None); confirming.set(true) }>
                                    "Revoke"
                                </button>
                            });
                        }
                        any(view! {
                            <p class="device-confirm" role="alert">{warning.clone()}</p>
                            <button class="btn btn-danger" type="button" data-testid="confirm-revoke"
                                disabled=flag(move || revoke.pending().get())
                                on:click={
                                    let name = name.clone();
                                    move |_| { revoke.dispatch(name.clone()); }
                                }>
                                "Revoke"
                            </button>
                            <button class="btn btn-quiet" type="button" on:click=move |_| confirming.set(false)>
                                "Cancel"
                            </button>
                        })
                    }}
                    {part(move || error.get().map(|e| any(view! { <p class="device-error" role="alert">{e}</p> })))}
                </div>
            }))}
        </li>
    })
}

/// "Pair a new device": choose the scope, get a one-time link to open on the new browser.
#[component]
fn PairPanel() -> impl IntoView {
    let offer = RwSignal::new(None::<PairingOffer>);
    let error = RwSignal::new(None::<String>);
    let make = Action::new(move |scope: &DeviceScope| {
        let scope = *scope;
        async move { make_pairing_link(scope).await }
    });
    crate::shape::effect(move || {
        if let Some(result) = make.value().get() {
            match result {
                Ok(o) => {
                    error.set(None);
                    offer.set(Some(o));
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        }
    });
    let offset = clock_offset();
    any(view! {
        <section class="pair-panel" aria-labelledby="pair-panel-title">
            <h3 id="pair-panel-title">"Pair a new device"</h3>
            <p>"Make a one-time link and open it on the new browser within 10 minutes. You can also run "
               <code>"iris pair --scope read"</code> " on the server."</p>
            <div class="pair-buttons">
                <button class="btn" type="button" data-testid="pair-read"
                    disabled=flag(move || make.pending().get())
                    on:click=move |_| { make.dispatch(DeviceScope::Read); }>
                    "Link for a read device"
                </button>
                <button class="btn" type="button" data-testid="pair-control"
                    disabled=flag(move || make.pending().get())
                    on:click=move |_| { make.dispatch(DeviceScope::Control); }>
                    "Link for a control device"
                </button>
            </div>
            {part(move || error.get().map(|e| any(view! { <p class="device-error" role="alert">{e}</p> })))}
            {part(move || offer.get().map(|o| {
                let (scope_text, _) = scope_badge(o.scope);
                any(view! {
                    <div class="pair-offer" data-testid="pair-offer">
                        <p>{format!("{scope_text} link, works once until {}:", format_time(o.expires_at, offset.get()))}</p>
                        {qr_view(&o.qr)}
                        <p class="pair-qr-note">"Scan it with the new phone's camera, or copy the link:"</p>
                        <textarea class="pair-url" readonly rows="2" prop:value=o.url.clone()
                            aria-label="Pairing link" data-testid="pair-url"></textarea>
                        <CopyButton text=o.url.clone()/>
                    </div>
                })
            }))}
        </section>
    })
}

/// The pairing link's QR code (`rows` of modules, `1` dark), drawn as one SVG path with the
/// 4-module quiet zone a camera needs, dark on white in either colour scheme; `None` when the
/// server sent none.
fn qr_view(rows: &[String]) -> Option<AnyView> {
    use std::fmt::Write as _;
    if rows.is_empty() {
        return None;
    }
    let side = rows.len() + 8;
    let mut path = String::new();
    for (y, row) in rows.iter().enumerate() {
        for (x, module) in row.chars().enumerate() {
            if module == '1' {
                let _ = write!(path, "M{} {}h1v1h-1z", x + 4, y + 4);
            }
        }
    }
    Some(any(view! {
        <svg class="pair-qr" data-testid="pair-qr" viewBox=format!("0 0 {side} {side}")
            role="img" aria-label="QR code of the pairing link" shape-rendering="crispEdges">
            <rect width=side height=side fill="#ffffff"/>
            <path d=path fill="#000000"/>
        </svg>
    }))
}

/// Copies `text` to the clipboard, then says so on the button for a moment; when the browser
/// refuses (no permission, not a secure page), it says to copy by hand.
#[component]
fn CopyButton(text: String) -> impl IntoView {
    let said = RwSignal::new(None::<&'static str>);
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let text = text.clone();
            leptos::task::spawn_local(async move {
                let written = match web_sys::window().map(|w| w.navigator().clipboard()) {
                    Some(clipboard) => {
                        wasm_bindgen_futures::JsFuture::from(clipboard.write_text(&text))
                            .await
                            .is_ok()
                    }
                    None => false,
                };
                said.try_set(Some(if written {
                    "Copied"
                } else {
                    "Select the link and copy it"
                }));
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &text;
    };
    any(view! {
        <button class="btn" type="button" data-testid="pair-copy" on:click=copy>
            "Copy link"
        </button>
        <span class="pair-copied" data-testid="pair-copied" role="status">{move || said.get()}</span>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(this_device: bool) -> DeviceInfo {
        DeviceInfo {
            name: "kitchen tablet".into(),
            scope: DeviceScope::Read,
            created_at: "2026-11-30T10:00:00Z".parse().unwrap(),
            last_used_at: None,
            this_device,
            demo_owner: false,
            notified: 0,
        }
    }

    #[test]
    fn revoking_this_browser_says_it_signs_out() {
        assert!(revoke_warning(&device(true), false).contains("signed out"));
        assert!(!revoke_warning(&device(false), false).contains("signed out"));
        assert!(revoke_warning(&device(false), false).contains("kitchen tablet"));
    }

    #[test]
    fn a_read_device_is_not_said_to_stop_answering() {
        let read = revoke_warning(&device(false), false);
        assert!(read.contains("stop seeing cards"), "{read}");
        assert!(!read.contains("answering"), "{read}");
        let control = DeviceInfo {
            scope: DeviceScope::Control,
            ..device(false)
        };
        assert!(revoke_warning(&control, false).contains("stop seeing and answering cards"));
    }

    #[test]
    fn revoking_the_last_control_device_says_nobody_could_answer() {
        assert!(revoke_warning(&device(true), true).contains("last control device"));
        assert!(!revoke_warning(&device(true), false).contains("last control device"));
    }

    #[test]
    fn scopes_have_their_own_badges() {
        assert_ne!(
            scope_badge(DeviceScope::Read),
            scope_badge(DeviceScope::Control)
        );
    }
}
