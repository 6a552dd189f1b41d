//! The web app mounted on axum: Leptos pages (SSR + hydration), its server functions under
//! `/ui/`, the static site (`/pkg`), and [`WebBackend`], the server side of the app's
//! `AppBackend` seam. In `--demo`, a browser without credentials is signed in as the owner.

use std::sync::Arc;

use app::activity::filters::HistoryFilter;
use app::backend::{AppBackend, Viewer};
use axum::extract::{Request, State};
use axum::http::{request::Parts, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::Utc;
use iris_core::ports::{
    ApprovalFilter, ApprovalQuery, ApprovalStore, DeviceStore, PageCursor, PageLimit, Scope,
    SearchText, StatusFilter,
};
use iris_core::wire::{
    Approval, ApprovalList, ApprovalStatus, AuditEntry, ChatResponse, Conversation, Decision,
    DeviceInfo, DeviceScope, PairingOffer, PluginList,
};
use leptos::prelude::{provide_context, use_context};
use leptos_axum::handle_server_fns_with_context;
use tower_sessions::Session;

use crate::auth;
use crate::error::ApiError;
use crate::pairing;
use crate::state::AppState;

/// Answered cards per Activity page (the "Older" control loads the next): enough for a screen
/// or two, few enough that the page stays small after a year of use.
const ACTIVITY_PAGE: PageLimit = PageLimit::DEFAULT;

/// The app's view of the server.
pub struct WebBackend {
    state: AppState,
}

/// A failed read or write of the store as the web app says it: an [`ApiError::Internal`]
/// through [`answer_with_status`] (logged once, a 500, the page reads
/// [`crate::error::INTERNAL_TEXT`]), never the storage's own words, which may name tables or SQL
/// (docs/ARCHITECTURE.md "A 500 says nothing of storage").
fn storage_failed<E: std::fmt::Display>(e: E) -> String {
    answer_with_status(ApiError::Internal(e.to_string()))
}

impl WebBackend {
    /// The app's view of this server's state.
    pub(crate) fn new(state: AppState) -> WebBackend {
        WebBackend { state }
    }

    fn actor(&self, viewer: &Viewer) -> iris_core::approvals::Actor {
        iris_core::approvals::Actor {
            name: viewer.name.clone(),
            scope: if viewer.can_answer {
                iris_core::ports::Scope::Control
            } else {
                iris_core::ports::Scope::Read
            },
            surface: iris_core::wire::Surface::Web,
        }
    }
}

#[async_trait::async_trait]
impl AppBackend for WebBackend {
    async fn viewer(&self, request: &Parts) -> Option<Viewer> {
        let (device, _) =
            auth::authenticate(&self.state.store, &request.headers, &request.extensions)
                .await
                .ok()?
                .device()?;
        // An agent's token opens no page: it only calls tools and reads its own approvals.
        if device.scope == iris_core::ports::Scope::Agent {
            return None;
        }
        Some(Viewer {
            name: device.name,
            can_answer: auth::may_change_state(device.scope),
        })
    }

    async fn pending(&self) -> Result<Vec<Approval>, String> {
        self.state
            .store
            .approvals(&ApprovalFilter {
                status: Some(ApprovalStatus::Pending),
            })
            .await
            .map_err(storage_failed)
    }

    async fn answered(
        &self,
        before: Option<String>,
        filter: &HistoryFilter,
    ) -> Result<ApprovalList, String> {
        let before = before
            .map(|c| PageCursor::parse(&c))
            .transpose()
            .map_err(|e| e.to_string())?;
        let page = self
            .state
            .store
            .approval_page(&history_query(filter, before))
            .await
            .map_err(storage_failed)?;
        Ok(ApprovalList {
            approvals: page.approvals,
            next: page.next.map(|c| c.as_text()),
        })
    }

    fn card_tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = self
            .state
            .service
            .agent()
            .toolbox()
            .registry()
            .tools()
            .iter()
            .filter(|t| t.approved_per_call())
            .map(|t| t.name.clone())
            .collect();
        // An MCP upstream's tools from its manifest alone: asking the upstream itself (as the
        // Plugins page does for its hints) would start it for every refresh of Activity.
        if let Some(gateway) = &self.state.gateway {
            for upstream in gateway.upstreams().values() {
                use iris_core::plugin::Plugin as _;
                tools.extend(
                    upstream
                        .manifest()
                        .tools
                        .iter()
                        .filter(|t| t.approved_per_call())
                        .map(|t| t.name.clone()),
                );
            }
        }
        tools.sort();
        tools.dedup();
        tools
    }

    async fn approval(&self, id: &str) -> Result<Option<Approval>, String> {
        self.state.store.approval(id).await.map_err(storage_failed)
    }

    async fn respond(
        &self,
        viewer: &Viewer,
        id: &str,
        decision: Decision,
        reason: Option<String>,
        items: Option<Vec<u32>>,
        edits: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Approval, String> {
        let actor = self.actor(viewer);
        let (state, id) = (self.state.clone(), id.to_string());
        crate::api::to_the_end(async move {
            state
                .service
                .respond_with_passkey(
                    &id,
                    decision,
                    reason,
                    iris_core::approvals::Shaping {
                        items: items.as_deref(),
                        edits: edits.as_ref(),
                    },
                    &actor,
                    None,
                )
                .await
                .map_err(ApiError::from)
        })
        .await
        .map_err(answer_with_status)
    }

    async fn undo(&self, viewer: &Viewer, id: &str) -> Result<Approval, String> {
        let actor = self.actor(viewer);
        let (state, id) = (self.state.clone(), id.to_string());
        crate::api::to_the_end(async move {
            state
                .service
                .undo(&id, &actor)
                .await
                .map_err(ApiError::from)
        })
        .await
        .map_err(answer_with_status)
    }

    async fn review_edit(
        &self,
        viewer: &Viewer,
        id: &str,
        edits: serde_json::Map<String, serde_json::Value>,
    ) -> Result<iris_core::wire::EditReview, String> {
        let actor = self.actor(viewer);
        self.state
            .service
            .review_edit(id, &edits, &actor)
            .await
            .map_err(|e| answer_with_status(ApiError::from(e)))
    }

    async fn give_reason(
        &self,
        viewer: &Viewer,
        id: &str,
        reason: String,
    ) -> Result<Approval, String> {
        let actor = self.actor(viewer);
        let (approval, telling) = crate::api::give_reason(&self.state, id, &reason, &actor)
            .await
            .map_err(answer_with_status)?;
        // The page reloads the conversation when this returns: after the model's reply.
        let _ = telling.await;
        Ok(approval)
    }

    async fn chat(
        &self,
        viewer: &Viewer,
        message: String,
        conversation_id: Option<String>,
    ) -> Result<ChatResponse, String> {
        let actor = self.actor(viewer);
        let state = self.state.clone();
        // The same turn as `POST /api/chat` (escalation included), run to its end however the
        // browser goes away (a reload in the middle cannot cut it).
        crate::api::to_the_end(async move {
            state
                .service
                .chat(&actor, conversation_id, &message)
                .await
                .map_err(ApiError::from)
        })
        .await
        .map_err(answer_with_status)
    }

    async fn conversation(&self, id: &str) -> Result<Conversation, String> {
        let lines = self.state.store.lines(id).await.map_err(storage_failed)?;
        Ok(Conversation {
            id: id.to_string(),
            lines,
        })
    }

    async fn audit(&self, approval_id: &str) -> Result<Vec<AuditEntry>, String> {
        self.state
            .store
            .audit(Some(approval_id))
            .await
            .map_err(storage_failed)
    }

    async fn actions(&self) -> Result<Vec<AuditEntry>, String> {
        let limit = iris_core::ports::PageLimit::parse(ACTIONS_SHOWN).map_err(storage_failed)?;
        self.state
            .store
            .actions(limit)
            .await
            .map_err(storage_failed)
    }

    fn push_off(&self) -> Option<String> {
        self.state
            .push
            .is_none()
            .then(|| crate::push::PUSH_OFF.to_owned())
    }

    async fn plugins(&self) -> Result<PluginList, String> {
        Ok(crate::mcp::plugin_list(&self.state).await)
    }

    async fn devices(&self, viewer: &Viewer) -> Result<Vec<DeviceInfo>, String> {
        let devices = DeviceStore::list(&self.state.store)
            .await
            .map_err(storage_failed)?;
        let notified = iris_core::ports::PushStore::subscription_counts(&self.state.store)
            .await
            .map_err(storage_failed)?;
        Ok(devices
            .into_iter()
            .map(|d| DeviceInfo {
                notified: notified.get(&d.name).copied().unwrap_or(0),
                this_device: d.name == viewer.name,
                demo_owner: self.state.demo_token.is_some() && d.name == crate::state::DEMO_DEVICE,
                scope: pairing::device_scope(d.scope),
                name: d.name,
                created_at: d.created_at,
                last_used_at: d.last_used_at,
            })
            .collect())
    }

    async fn revoke_device(&self, viewer: &Viewer, name: &str) -> Result<(), String> {
        if !viewer.can_answer {
            return Err(format!(
                "“{}” is a read device; only a control device may revoke devices",
                viewer.name
            ));
        }
        if self.state.demo_token.is_some() && name == crate::state::DEMO_DEVICE {
            // Every browser of the demo signs in as this device: revoking it would sign them
            // all out until the server restarts.
            return Err(format!(
                "“{name}” is the demo's owner: every browser of the demo signs in as it, so it cannot be revoked while the demo runs."
            ));
        }
        if self
            .state
            .store
            .revoke(name)
            .await
            .map_err(storage_failed)?
        {
            tracing::info!(device = %name, by = %viewer.name, "revoked a device from the web app");
            // Its waiting cards end now, not at the next sweep (docs/liveness.md "revoked
            // devices"); a failure here is caught up by that sweep.
            if let Err(e) = self.state.service.reject_revoked().await {
                tracing::warn!(error = %e, "rejecting the revoked device's cards failed; the sweep will");
            }
            Ok(())
        } else {
            Err(format!(
                "No live device is named “{name}” (already revoked?)."
            ))
        }
    }

    async fn pairing_link(
        &self,
        viewer: &Viewer,
        scope: DeviceScope,
        request: &Parts,
    ) -> Result<PairingOffer, String> {
        if !viewer.can_answer {
            return Err(format!(
                "“{}” is a read device; only a control device may pair devices",
                viewer.name
            ));
        }
        let scope = match scope {
            DeviceScope::Read => Scope::Read,
            DeviceScope::Control => Scope::Control,
            DeviceScope::Agent => {
                return Err("an agent is never paired through a link: its token is made with `iris devices add --scope agent` at the server".into())
            }
        };
        let base = pairing::request_base(
            self.state.public_origin.as_deref(),
            &self.state.settings.bind,
            &request.headers,
        );
        pairing::make_link(&self.state.store, scope, &viewer.name, &base, Utc::now())
            .await
            .map_err(storage_failed)
    }
}

/// The listing's question for a page of Activity's history: answered cards matching `filter`
/// below `before`. The app checked each value already ([`HistoryFilter::from_query`]); one this
/// listing still cannot take (a server function called by hand) is left out, as the page
/// leaves out a bad value of its address, rather than failing the page.
fn history_query(filter: &HistoryFilter, before: Option<PageCursor>) -> ApprovalQuery {
    let status = match filter.status.as_deref().map(StatusFilter::parse) {
        // The history never holds waiting cards, whatever the filter says.
        Some(Ok(status @ StatusFilter::Is(s))) if s != ApprovalStatus::Pending => status,
        _ => StatusFilter::Answered,
    };
    ApprovalQuery {
        status,
        tool: filter.tool.clone(),
        surface: filter.surface.clone(),
        since: filter.since_time(),
        until: filter.until_time(),
        text: filter
            .q
            .as_deref()
            .and_then(|q| SearchText::parse(q).ok().flatten()),
        before,
        limit: ACTIVITY_PAGE,
        requested_by: None,
    }
}

/// The error's sentence for the app, with the JSON API's status on the server function's
/// response (409 already decided, 410 expired, …), so the browser and scripts tell a lost race
/// from a failure.
fn answer_with_status(error: ApiError) -> String {
    error.log_internal();
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(error.status());
    }
    error.to_string()
}

/// The addresses of the app's pages (as `app::page::Page` reads them).
const PAGES: [&str; 5] = ["/", "/activity", "/activity/{id}", "/plugins", "/devices"];

/// Pages, server functions and static files (`/pkg` with its precompressed files, the rest of
/// the site root through Leptos' file handler).
pub fn routes(state: &AppState) -> Router<AppState> {
    let backend: Arc<dyn AppBackend> = Arc::new(WebBackend {
        state: state.clone(),
    });
    let options = state.leptos.clone();
    let page_backend = backend.clone();
    let fn_backend = backend;
    // The app's pages (app::page::Page says which address shows which): each rendered on the
    // server, streamed in order (a page's lists are in the HTML where they belong, so a
    // browser without JavaScript reads them, never a "Loading…" that scripts were to replace),
    // then hydrated. Any other address falls through to the file handler
    // below, which renders the app's "does not exist" page with status 404. Leptos' resources
    // spawn on tokio while a page renders (an Err here only says it was set already).
    let _ = any_spawner::Executor::init_tokio();
    // A wasm per set of pages when the site has them (app::page::Bundle).
    let per_page = crate::assets::has_bundle_per_page(&state.leptos);
    // `activity`: an Activity page's first snapshot, loaded before the page renders
    // (app::activity::load: the page carries it, so the browser needs no resource to read it).
    let render = move |activity: Option<app::activity::load::ActivityLoad>| {
        let backend = page_backend.clone();
        let options = options.clone();
        leptos_axum::render_app_to_stream_in_order_with_context(
            move || {
                // Every inline script of the page carries this nonce (Leptos' hydration and
                // resource scripts), and the page's Content-Security-Policy allows only it.
                leptos::nonce::provide_nonce();
                if let (Some(nonce), Some(response)) = (
                    leptos::nonce::use_nonce(),
                    use_context::<leptos_axum::ResponseOptions>(),
                ) {
                    if let Ok(policy) =
                        axum::http::HeaderValue::from_str(&crate::headers::page_policy(&nonce))
                    {
                        response.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, policy);
                    }
                }
                provide_context(backend.clone());
                if per_page {
                    provide_context(app::page::BundlePerPage);
                }
                if let Some(activity) = activity.clone() {
                    app::activity::load::provide(activity);
                }
            },
            move || app::shell(options.clone()),
        )
    };
    let load_backend = fn_backend.clone();
    let page = move |req: Request| {
        let backend = load_backend.clone();
        let render = render.clone();
        async move {
            let (parts, body) = req.into_parts();
            let activity = match app::page::Page::from_path(parts.uri.path()) {
                app::page::Page::Activity(focus) => {
                    Some(app::activity::load::load(backend, &parts, focus).await)
                }
                _ => None,
            };
            render(activity)(Request::from_parts(parts, body)).await
        }
    };
    let mut pages = Router::new();
    for path in PAGES {
        pages = pages.route(path, get(page.clone()));
    }
    let pages = pages.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        crate::card_form::refusal_shown_once,
    ));
    pages
        .merge(crate::card_form::routes())
        .nest_service(
            &format!("/{}", state.leptos.site_pkg_dir),
            crate::assets::pkg_service(&state.leptos),
        )
        .route(
            "/ui/{*fn_name}",
            post(move |req: Request| {
                let backend = fn_backend.clone();
                async move {
                    handle_server_fns_with_context(move || provide_context(backend.clone()), req)
                        .await
                }
            }),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(
            app::shell,
        ))
}

/// CSRF for the app's server functions: a POST under `/ui/` that does not carry a bearer token
/// (so it rides on the browser's session cookie) must be same-origin; a forged cross-site form
/// is refused with 403 before anything runs.
pub async fn csrf_guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let is_ui_post = req.method() == Method::POST && req.uri().path().starts_with("/ui/");
    if is_ui_post {
        if let Err(refused) = auth::refuse_cross_site(
            req.method(),
            req.headers(),
            state.public_origin.as_deref(),
            auth::bearer_token(req.headers()).is_none(),
        ) {
            return refused.into_response();
        }
    }
    next.run(req).await
}

/// In `--demo`: a page request (GET) from a browser that is not signed in is signed in as the
/// demo owner device (a session, like a paired browser's), before the page renders, when it
/// names this machine (or `IRIS_PUBLIC_URL`'s host) as its `Host` ([`demo_host`]). So is a
/// post of a card's form from the demo's own page (`card_form`): a page drawn before the
/// server restarted answers as the page would after a reload. API requests are never signed
/// in this way (they keep 401 without credentials), nor is the pairing page (so a browser can
/// be paired as another device in the demo too).
pub async fn demo_sign_in(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(token) = state.demo_token.clone() else {
        return next.run(req).await;
    };
    let page = is_app_page(req.method(), req.uri().path());
    // This layer runs before the CSRF guard: only a form posted from this site signs in.
    let form = crate::card_form::is_form_post(req.method(), req.uri().path())
        && auth::same_origin(req.method(), req.headers(), state.public_origin.as_deref());
    if !(page || form) || !demo_host(req.headers(), state.public_origin.as_deref()) {
        return next.run(req).await;
    }
    // Read before authenticating: a session whose device is gone is flushed by it.
    let before = auth::session_device(req.extensions()).await.ok().flatten();
    let identified = auth::authenticate(&state.store, req.headers(), req.extensions()).await;
    // Not signed in, or signed in as an earlier run's demo owner (each run adds it anew),
    // whether this page request or an earlier one (the event stream reconnecting after a
    // restart) found it revoked; a browser whose own paired device was revoked stays signed out.
    let earlier_demo_owner = before.is_some_and(|d| d.name == crate::state::DEMO_DEVICE)
        || auth::revoked_session_device(req.extensions())
            .await
            .as_deref()
            == Some(crate::state::DEMO_DEVICE);
    let sign_in = match identified {
        Ok(auth::Identified::Nobody) => true,
        Ok(auth::Identified::Unknown(auth::Presented::Session)) => earlier_demo_owner,
        _ => false,
    };
    if let (true, Some(session)) = (sign_in, req.extensions().get::<Session>()) {
        let token_hash = auth::token_hash(&token);
        let signed = auth::sign_in(session, crate::state::DEMO_DEVICE, &token_hash);
        if let Err(e) = signed.await {
            tracing::warn!(error = %e, "demo: signing the browser in failed");
        }
    }
    next.run(req).await
}

/// Whether a request names this machine or the public address as its `Host`: the demo signs
/// only such page loads in. A page of another site whose name was re-pointed at this machine
/// (DNS rebinding) sends its own name as `Host`; signing it in would let that site's scripts
/// answer cards with the demo owner's session, since to them this server is same-origin.
fn demo_host(headers: &axum::http::HeaderMap, public_origin: Option<&str>) -> bool {
    let Some(host) = headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let public_host = public_origin
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest);
    iris_core::push::is_loopback(iris_core::push::host_of(host))
        || public_host.is_some_and(|p| p.eq_ignore_ascii_case(host))
}

/// Whether a GET path is one of the app's pages (not the API, static files, server functions or
/// the pairing page).
fn is_app_page(method: &Method, path: &str) -> bool {
    method == Method::GET
        && !path.starts_with("/api/")
        && !path.starts_with("/governance/")
        && !path.starts_with("/pkg/")
        && !path.starts_with("/ui/")
        && !path.starts_with("/pair/")
}

/// The page [`same_site_bounce`] answers with: it loads the same address again from this site.
pub const BOUNCE_PAGE: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"refresh\" content=\"0\"><title>IRIS approvals</title></head>\
<body><p>Opening IRIS…</p></body></html>";

/// SameSite=Strict keeps the session cookie off a page opened from a link on another
/// site (webmail, a chat's web app), so a paired browser would be shown "not paired" (or, in
/// the demo, signed in afresh). Such a first request (`Sec-Fetch-Site: cross-site`, no cookie)
/// gets a page that reloads itself: that load comes from this site, so the browser sends the
/// cookie. Nothing is read or changed on the bounce.
pub async fn same_site_bounce(req: Request, next: Next) -> Response {
    let cross_site = req
        .headers()
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site");
    if cross_site
        && is_app_page(req.method(), req.uri().path())
        && !req.headers().contains_key(axum::http::header::COOKIE)
    {
        return axum::response::Html(BOUNCE_PAGE).into_response();
    }
    next.run(req).await
}

/// How many writes without a card Activity lists (the newest).
const ACTIONS_SHOWN: &str = "20";
