//! The fields of a kind's spec and status, read from the Rust source of one of its versions
//! (with syn): what the conversions between two versions copy.

use quote::ToTokens as _;
use serde::Serialize;

/// A named field of a struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// Its type, as tokens.
    pub ty: String,
    /// Its type names one the version's file defines: the other version's has the same name
    /// but is another type.
    pub local: bool,
    /// Its type is one the version's file defines without `Default` (derived or implemented):
    /// a conversion cannot leave it to `Default::default()`.
    pub no_default: Option<String>,
}

/// The named fields of the struct `name` in `source`; `None` if the source does not parse or
/// has no such struct.
pub fn of_struct(source: &str, name: &str) -> Option<Vec<Field>> {
    let file = syn::parse_file(source).ok()?;
    let defined: Vec<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect();
    let with_default: Vec<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) if derives_default(&s.attrs) => Some(s.ident.to_string()),
            syn::Item::Enum(e) if derives_default(&e.attrs) => Some(e.ident.to_string()),
            syn::Item::Impl(i)
                if i.trait_
                    .as_ref()
                    .is_some_and(|(_, path, _)| path.is_ident("Default")) =>
            {
                Some(i.self_ty.to_token_stream().to_string())
            }
            _ => None,
        })
        .collect();
    let item = file.items.iter().find_map(|item| match item {
        syn::Item::Struct(s) if s.ident == name => Some(s),
        _ => None,
    })?;
    let syn::Fields::Named(fields) = &item.fields else {
        return None;
    };
    let fields = fields
        .named
        .iter()
        .filter_map(|field| {
            let ty = field.ty.to_token_stream().to_string();
            let words: Vec<&str> = ty
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect();
            let local = words
                .iter()
                .any(|w| *w == "self" || *w == "super" || defined.iter().any(|d| d == w));
            // The outer type: `Option<Target>` has a default whatever `Target` is.
            let outer = match &field.ty {
                syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            };
            let no_default = outer.filter(|o| {
                defined.contains(o) && !with_default.contains(o) && o.as_str() != "Self"
            });
            Some(Field {
                name: field.ident.as_ref()?.to_string(),
                ty,
                local,
                no_default,
            })
        })
        .collect();
    Some(fields)
}

/// Whether `attrs` has a `#[derive(...)]` naming `Default`.
fn derives_default(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("derive")
            && attr
                .to_token_stream()
                .to_string()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "Default")
    })
}

/// A field a conversion sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Copied {
    pub name: String,
    /// From the other version's field of the same name and type; else left to the user.
    pub copied: bool,
}

/// Each field of `to`, copied from the field of `from` of the same name and type if there is
/// one (a type of the version's own file is never the same).
pub fn copied(from: &[Field], to: &[Field]) -> Vec<Copied> {
    to.iter()
        .map(|field| Copied {
            name: field.name.clone(),
            copied: from
                .iter()
                .any(|f| f.name == field.name && f.ty == field.ty && !f.local && !field.local),
        })
        .collect()
}
