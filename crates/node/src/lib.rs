//! Node bindings of coderig: the napi-rs addon behind the npm package
//! `coderig`. Names are camelCase; `npx napi build` generates `index.js`
//! and the TypeScript types in `index.d.ts` from the `#[napi]` items.
//!
//! The addon is a face of the core and nothing more: a binding takes its
//! arguments as JS values, has the core decode them ([`helpers::arg`],
//! `coderig::json`), calls the core and returns through [`helpers::js`],
//! which throws every refusal as the one JS form of a
//! [`coderig::Error`] ([`helpers::to_js_error`]):
//!
//! ```ignore
//! #[napi]
//! pub fn sanitize_slug(env: Env, #[napi(ts_arg_type = "string")] s: Unknown) -> napi::Result<String> {
//!     js(&env, || Ok(arena::sanitize_slug(&arg::<String>(&env, "text", s)?)))
//! }
//! ```
//!
//! One file per capability; namespaces (`hashline`, `flow`, `arena`, `model`) use
//! `#[napi(namespace = "hashline")]` on the items of `src/hashline.rs` etc.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod arena;
pub mod battle;
pub mod edit;
mod events;
mod exit;
pub mod flow;
pub mod hash;
pub mod hashline;
pub mod helpers;
pub mod model;
pub mod rig;
pub mod rig_types;
pub mod run;
pub mod turn;

use napi_derive::napi;
use std::collections::BTreeMap;

/// The core's list of names for every enum that crosses the face, keyed
/// as Python's `coderig.names()`: the values every string union of
/// `index.d.ts` must list, in the core's order.
pub fn name_lists() -> BTreeMap<&'static str, &'static [&'static str]> {
    coderig::names::LISTS.iter().copied().collect()
}

/// The core's names, `{tier: ['exact', ...], match_kind: [...], ...}`:
/// every name a string argument accepts or a result holds (see
/// [`name_lists`] for the keys; `NameList`, their TypeScript union, is
/// generated from the core's list into `types/views.d.ts`).
#[napi(ts_return_type = "Record<NameList, string[]>")]
pub fn names() -> BTreeMap<&'static str, Vec<&'static str>> {
    name_lists()
        .into_iter()
        .map(|(key, list)| (key, list.to_vec()))
        .collect()
}
