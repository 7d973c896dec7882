//! The `named_enum!` macro every enum that crosses a face uses, and the
//! error its `FromStr` gives: the small room the capabilities import. It
//! imports nothing of the crate, so no capability depends on another
//! through it (the table of every list, [`crate::names::LISTS`], lives in
//! the parent module, which nothing in the crate imports).
//!
//! Every such enum (tiers, match kinds, violation kinds, trigger rules, step
//! kinds, outcomes, statuses, lanes, error kinds, ...) gets from
//! `named_enum!` an `ALL` list, a `NAMES` list, `as_str`, `Display`,
//! `FromStr`, and serde (`Serialize` writes `as_str`, `Deserialize` goes
//! through `FromStr`), so the spelling used by JSON, the bindings' stubs and
//! the error messages can never drift apart.

/// A bad name given for one of the named enums (trigger rule, step kind,
/// lane, ...).
///
/// The message lists every valid name, so a caller (or a model writing a
/// spec) can correct it without reading the docs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; expected one of: {valid}")]
pub struct ParseNameError {
    /// What was being parsed, e.g. `"trigger rule"`.
    pub what: &'static str,
    /// The text that did not parse.
    pub given: String,
    /// Every accepted canonical name, comma-separated.
    pub valid: &'static str,
}

impl ParseNameError {
    /// The stable code every face gives this error: `INVALID_INPUT`.
    pub fn code(&self) -> &'static str {
        "INVALID_INPUT"
    }
}

/// Implements the names of a unit-variant enum from one table.
///
/// ```text
/// named_enum!(Lane, "lane", { Local => "local", Cloud => "cloud" | "remote" });
/// ```
///
/// The first literal of a variant is its canonical name; the ones after `|`
/// are accepted aliases. Parsing takes the canonical name or an alias, ASCII
/// case-insensitively, ignoring surrounding whitespace; everything else is a
/// [`ParseNameError`] listing the canonical names. The enum is declared
/// separately (with its docs and derives, but without serde derives: the
/// macro provides serde, and a `utoipa::ToSchema` string enum under the
/// `openapi` feature).
macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// Every canonical name, in declaration order (`ALL` mapped by
            /// `as_str`): the list the bindings' stubs must equal.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The stable snake_case name: what JSON, the bindings and the
            /// messages use, and what `FromStr` accepts.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::names::macros::ParseNameError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let wanted = s.trim();
                $(
                    if wanted.eq_ignore_ascii_case($name) $(|| wanted.eq_ignore_ascii_case($alias))* {
                        return Ok($ty::$variant);
                    }
                )+
                Err($crate::names::macros::ParseNameError {
                    what: $what,
                    given: s.to_string(),
                    valid: concat!($($name, ", "),+).trim_end_matches(", "),
                })
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl ::serde::de::Visitor<'_> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, concat!("a ", $what, ", one of: {}"), $ty::NAMES.join(", "))
                    }
                    fn visit_str<E: ::serde::de::Error>(self, s: &str) -> Result<$ty, E> {
                        s.parse().map_err(E::custom)
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $ty {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some($ty::NAMES.iter().copied()))
                    .description(Some(concat!("A ", $what, ".")))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $ty {}
    };
}
pub(crate) use named_enum;

#[cfg(test)]
mod tests {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Colour {
        Red,
        DarkBlue,
    }
    named_enum!(Colour, "colour", { Red => "red", DarkBlue => "dark_blue" | "navy" });

    #[test]
    fn names_parse_print_and_round_trip_through_serde() {
        assert_eq!(Colour::NAMES, ["red", "dark_blue"]);
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        for (text, parsed) in [
            ("red", Ok(Colour::Red)),
            (" RED ", Ok(Colour::Red)),
            ("dark_blue", Ok(Colour::DarkBlue)),
            ("navy", Ok(Colour::DarkBlue)),
            ("blue", Err(())),
            ("", Err(())),
        ] {
            assert_eq!(text.parse::<Colour>().map_err(|_| ()), parsed, "{text:?}");
        }
        let err = "blue".parse::<Colour>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown colour \"blue\"; expected one of: red, dark_blue"
        );
        for c in Colour::ALL {
            let json = serde_json::to_value(c).unwrap();
            assert_eq!(json, serde_json::json!(c.as_str()));
            assert_eq!(serde_json::from_value::<Colour>(json).unwrap(), *c);
        }
        let bad = serde_json::from_value::<Colour>(serde_json::json!("blue")).unwrap_err();
        assert!(
            bad.to_string().contains("expected one of: red, dark_blue"),
            "{bad}"
        );
        let wrong_type = serde_json::from_value::<Colour>(serde_json::json!(3)).unwrap_err();
        assert!(
            wrong_type
                .to_string()
                .contains("a colour, one of: red, dark_blue"),
            "{wrong_type}"
        );
    }
}
