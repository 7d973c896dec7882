//! Node bindings of coderig: the napi-rs addon behind the npm package
//! `coderig`. Names are camelCase; `npx napi build` generates `index.js`
//! and the TypeScript types in `index.d.ts` from the `#[napi]` items.
//!
//! One file per capability; `#[napi]` items register themselves, so a new
//! file only needs a `mod` line here. A binding converts JS values, calls
//! the core and maps a [`coderig::EditError`] with [`errors::to_js_error`],
//! which throws an `Error` whose `code` is the stable code:
//!
//! ```ignore
//! #[napi]
//! pub fn apply_edit(env: Env, content: String, old: String, new_text: String,
//!                   options: Option<ApplyEditOptions>) -> napi::Result<Applied> {
//!     // `new` is a reserved word in TypeScript: such parameters are `new_text`.
//!     let (edit, opts) = split_options(options, old, new_text);
//!     coderig::apply_edit_with(&content, &edit, &opts)
//!         .map(Applied::from)
//!         .map_err(|e| to_js_error(&env, e))
//! }
//! ```
//!
//! Namespaces (`hashline`, `flow`, `arena`) use `#[napi(namespace = "hashline")]`
//! on the items of `src/hashline.rs` etc.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod arena;
pub mod edit;
pub mod errors;
pub mod flow;
pub mod hash;
pub mod hashline;
