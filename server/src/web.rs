//! The web app mounted on axum: Leptos pages (SSR + hydration), its server functions under
//! `/ui/`, the static site (`/pkg`), and [`WebBackend`], the server side of the app's
//! `AppBackend` seam. In `--demo`, a browser without credentials is signed in as the owner.

use std::sync::Arc;

use app::backend::{AppBackend, Viewer};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use iris_core::ports::{AuditLog, ConversationStore, QueueStore};
use iris_core::wire::{Approval, AuditEntry, ChatResponse, Conversation, Decision, PluginList};
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, handle_server_fns_with_context, LeptosRoutes};

use crate::auth::{self, Presented};
use crate::state::AppState;
use crate::sweeps;

/// The app's view of the server.
pub struct WebBackend {
    state: AppState,
}

fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

impl WebBackend {
    async fn actor(&self, viewer: &Viewer) -> iris_core::kernel::Actor {
        iris_core::kernel::Actor {
            name: viewer.name.clone(),
            scope: if viewer.can_answer {
                iris_core::ports::Scope::Control
            } else {
                iris_core::ports::Scope::Read
            },
            surface: "web".into(),
        }
    }
}

#[async_trait::async_trait]
impl AppBackend for WebBackend {
    async fn viewer(&self, headers: &HeaderMap) -> Option<Viewer> {
        let (device, _) = auth::authenticate(&self.state.store, headers)
            .await
            .ok()??;
        Some(Viewer {
            name: device.name,
            can_answer: auth::may_change_state(device.scope),
        })
    }

    async fn approvals(&self) -> Result<Vec<Approval>, String> {
        self.state.store.list(None).await.map_err(text)
    }

    async fn approval(&self, id: &str) -> Result<Option<Approval>, String> {
        self.state.store.get(id).await.map_err(text)
    }

    async fn respond(
        &self,
        viewer: &Viewer,
        id: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<Approval, String> {
        let actor = self.actor(viewer).await;
        let row = self
            .state
            .governance
            .respond_to_approval(id, decision, reason, &actor)
            .await
            .map_err(text)?;
        sweeps::spawn_resume(self.state.clone(), id.to_string());
        Ok(row)
    }

    async fn chat(
        &self,
        viewer: &Viewer,
        message: String,
        conversation_id: Option<String>,
    ) -> Result<ChatResponse, String> {
        if !viewer.can_answer {
            return Err(format!(
                "device `{}` has read scope; only a control device may chat",
                viewer.name
            ));
        }
        let message = crate::api::chat_message(&message)?;
        self.state
            .agent
            .run_turn(conversation_id, message)
            .await
            .map_err(text)
    }

    async fn conversation(&self, id: &str) -> Result<Conversation, String> {
        let lines = self.state.store.lines(id).await.map_err(text)?;
        Ok(Conversation {
            id: id.to_string(),
            lines,
        })
    }

    async fn audit(&self, approval_id: &str) -> Result<Vec<AuditEntry>, String> {
        self.state
            .store
            .entries(Some(approval_id))
            .await
            .map_err(text)
    }

    async fn plugins(&self) -> Result<PluginList, String> {
        Ok(self.state.agent.registry().plugin_list())
    }
}

/// Pages, server functions and static files.
pub fn routes(state: &AppState) -> Router<AppState> {
    let backend: Arc<dyn AppBackend> = Arc::new(WebBackend {
        state: state.clone(),
    });
    let options = state.leptos.clone();
    let page_backend = backend.clone();
    let fn_backend = backend;
    Router::new()
        .leptos_routes_with_context(
            state,
            generate_route_list(app::App),
            move || provide_context(page_backend.clone()),
            move || app::shell(options.clone()),
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

/// CSRF for the app's server functions: a cookie-authenticated POST under `/ui/` must be
/// same-origin (a forged cross-site form is refused with 403 before anything runs).
pub async fn csrf_guard(req: Request, next: Next) -> Response {
    let is_ui_post = req.method() == Method::POST && req.uri().path().starts_with("/ui/");
    if is_ui_post
        && matches!(
            auth::presented_token(req.headers()),
            Some((_, Presented::Cookie))
        )
        && !auth::same_origin(req.method(), req.headers())
    {
        return (
            StatusCode::FORBIDDEN,
            "cross-site request refused: a cookie-authenticated change must come from this site (CSRF)",
        )
            .into_response();
    }
    next.run(req).await
}

/// In `--demo`: a page request (GET) without valid credentials is signed in as the demo owner:
/// the cookie is added to the request (so the first render already sees it) and set on the
/// response. API requests are never signed in this way (they keep 401 without credentials).
pub async fn demo_sign_in(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let Some(token) = state.demo_token.clone() else {
        return next.run(req).await;
    };
    let path = req.uri().path();
    let is_page = req.method() == Method::GET
        && !path.starts_with("/api/")
        && !path.starts_with("/governance/")
        && !path.starts_with("/pkg/")
        && !path.starts_with("/ui/");
    if !is_page {
        return next.run(req).await;
    }
    let signed_in = matches!(
        auth::authenticate(&state.store, req.headers()).await,
        Ok(Some(_))
    );
    if signed_in {
        return next.run(req).await;
    }
    let cookie = format!("{}={}", auth::COOKIE, token);
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        req.headers_mut().insert(header::COOKIE, v);
    }
    let mut response = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&auth::session_cookie(&token)) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}
