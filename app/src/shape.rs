//! The one type each kind of reactive closure has in a view. Leptos compiles its rendering code
//! (a render effect, and the erased view's or attribute's build, hydrate and rebuild) once per
//! closure type, and every `move || …` is a type of its own; a closure handed to the view
//! through one of these is a shared `Arc<dyn Fn>`, so that code is in the browser's wasm once
//! per kind, not once per closure (BENCHMARKS.md). Likewise a drawn part goes to the view as an
//! `AnyView` of its own element ([`any`]).

use std::sync::Arc;

use leptos::prelude::{AnyView, IntoAny, View};

/// A reactive text, or an attribute's text.
pub type Text = Arc<dyn Fn() -> String + Send + Sync>;

/// A reactive on/off attribute (`disabled`, `hidden`, `readonly`).
pub type Flag = Arc<dyn Fn() -> bool + Send + Sync>;

/// A reactive attribute that may be absent.
pub type MaybeText = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// A part shown on a condition (`None` draws nothing). A `Box`, not an `Arc` like the others:
/// Leptos takes an `Arc<dyn Fn>` only for a value that is `Sync`, which a view is not.
pub type Part = Box<dyn Fn() -> Option<AnyView> + Send + Sync>;

/// `f` as a [`Text`].
pub fn text(f: impl Fn() -> String + Send + Sync + 'static) -> Text {
    Arc::new(f)
}

/// `f` as a [`Flag`].
pub fn flag(f: impl Fn() -> bool + Send + Sync + 'static) -> Flag {
    Arc::new(f)
}

/// `f` as a [`MaybeText`].
pub fn maybe_text(f: impl Fn() -> Option<String> + Send + Sync + 'static) -> MaybeText {
    Arc::new(f)
}

/// `f` as a [`Part`].
pub fn part(f: impl Fn() -> Option<AnyView> + Send + Sync + 'static) -> Part {
    Box::new(f)
}

/// `view` as an [`AnyView`] of the element (or elements) it draws rather than of the `View<…>`
/// wrapper `view!` puts around them: the same element drawn inline in another view is then the
/// same type, with one copy of its erased rendering code, and a part that may be absent is an
/// `Option<AnyView>` like every other.
pub fn any<T: IntoAny>(view: View<T>) -> AnyView {
    view.into_inner().into_any()
}

/// Runs `f` as an effect: in the browser, once after the page is drawn and again whenever a
/// signal it read changes (never on the server). Every effect of the app goes through here, so
/// Leptos' effect code is in the browser's wasm once, not once per closure (Activity's 15 effects,
/// each its own closure type, cost 2.0 KB gzip more: BENCHMARKS.md "Wasm size"). An effect that needs its
/// previous run's value keeps it in a signal it holds.
pub fn effect(f: impl FnMut() + 'static) {
    let mut f: Box<dyn FnMut()> = Box::new(f);
    leptos::prelude::Effect::new(move |_| f());
}
