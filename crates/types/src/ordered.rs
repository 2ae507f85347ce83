//! `Serialize` impls that write a struct's fields in canonical key order (RFC 8785: keys by
//! UTF-16 code units), for the types written on every step.
//!
//! The canonical writer takes an object's members as they come and re-lays them when their keys
//! did not come in order; a derived impl writes the declared order, which the schemas' `required`
//! lists keep. A type given its impl here keeps its declaration (and so its schema) and is
//! written in key order, so the writer lays it out as it comes. The wire's compact text names
//! its fields in key order too. Each such type is listed in the schema test that checks it
//! writes exactly its schema's properties, in key order
//! (`schemas::hand_ordered_types_write_every_property_of_their_schema_in_key_order`).

/// Implements `Serialize` for a struct: each listed field under its key, in the order listed,
/// which must be the keys' canonical order. Serde's attributes on the struct's fields do not
/// apply (each field is written as its own type writes it, `None` as null): a type that needs
/// one to serialise (`skip_serializing_if`, `serialize_with`, `flatten`) keeps its derive.
macro_rules! serialize_in_key_order {
    ($ty:ident { $($key:literal => $field:ident),+ $(,)? }) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct as _;
                let mut state =
                    serializer.serialize_struct(stringify!($ty), [$($key),+].len())?;
                $(state.serialize_field($key, &self.$field)?;)+
                state.end()
            }
        }
    };
}
