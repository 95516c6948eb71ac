//! Small helpers for building and reading plain JS objects.
//!
//! What the wasm hands out to users (`stats()`, `breakers()`, events) is a
//! `#[derive(Serialize)]` struct made a plain object by [`to_js`], through
//! [`Plain`], a serde `Serializer` of the few shapes those structs have; the
//! other objects it makes (error descriptors, peer messages, fetch inits)
//! are built member by member with [`Obj`]. What comes in is read member by
//! member with [`get`]: `serde_wasm_bindgen::from_value` would link float
//! formatting (+22.8 KB gzip, from its type errors) and give worse errors.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

thread_local! {
    /// The JS string of every key read or written so far, by the address
    /// and length of its `&'static str` (never freed, so never another's).
    static KEYS: RefCell<Vec<(usize, usize, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `k` as a JS string, made once: an options object is read key by key on
/// every call, and decoding each name from wasm memory again cost more than
/// the read (Node: 16 µs a call for an options object of one member).
pub fn key(k: &'static str) -> JsValue {
    let id = (k.as_ptr() as usize, k.len());
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        if let Some((.., v)) = keys.iter().find(|(at, len, _)| (*at, *len) == id) {
            return v.clone();
        }
        let v = JsValue::from_str(k);
        keys.push((id.0, id.1, v.clone()));
        v
    })
}

pub fn get(obj: &JsValue, k: &'static str) -> Result<JsValue, JsValue> {
    js_sys::Reflect::get(obj, &key(k))
}

/// `value` as serde-wasm-bindgen's `to_value` made it (the shapes the
/// e2e tests read): a struct is a plain object with its fields in order,
/// a `None` marked `skip_serializing_if` absent (without it the key would
/// be there, `undefined`), a unit variant its name, a number a JS number.
/// [`Plain`] serializes only what the derived structs hold, so nothing here
/// fails; were it to, the value is `undefined`.
pub fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    value.serialize(Plain).unwrap_or(JsValue::UNDEFINED)
}

/// The serde `Serializer` behind [`to_js`]: structs, numbers, strings,
/// options and unit variants, the keys made JS strings once by [`key`].
/// In place of serde-wasm-bindgen's, whose key cache (a hash table per
/// pointer) and general serializer cost 2.3 KB gzip more (bench/README.md).
pub struct Plain;

/// A shape [`Plain`] does not write (none of the derived structs has one).
#[derive(Debug)]
pub struct Unwritten;

impl std::fmt::Display for Unwritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a shape to_js does not write")
    }
}

impl std::error::Error for Unwritten {}

impl serde::ser::Error for Unwritten {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unwritten
    }
}

type Never = serde::ser::Impossible<JsValue, Unwritten>;

/// [`Plain`]'s methods for the numbers it writes as the JS number they
/// are exactly (through `serialize_f64`).
macro_rules! as_f64 {
    ($($name:ident: $t:ty,)*) => {$(
        fn $name(self, v: $t) -> Result<JsValue, Unwritten> {
            self.serialize_f64(v.into())
        }
    )*};
}

/// [`Plain`]'s methods for the shapes it does not write.
macro_rules! unwritten {
    ($($name:ident($($arg:ty),*) -> $ok:ty;)*) => {$(
        fn $name(self, $(_: $arg),*) -> Result<$ok, Unwritten> {
            Err(Unwritten)
        }
    )*};
}

impl serde::Serializer for Plain {
    type Ok = JsValue;
    type Error = Unwritten;
    type SerializeSeq = Never;
    type SerializeTuple = Never;
    type SerializeTupleStruct = Never;
    type SerializeTupleVariant = Never;
    type SerializeMap = Never;
    type SerializeStruct = Obj;
    type SerializeStructVariant = Never;

    fn serialize_bool(self, v: bool) -> Result<JsValue, Unwritten> {
        Ok(JsValue::from_bool(v))
    }
    as_f64! {
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_f32: f32,
    }
    unwritten! {
        serialize_i64(i64) -> JsValue;
        serialize_u64(u64) -> JsValue;
        serialize_char(char) -> JsValue;
        serialize_bytes(&[u8]) -> JsValue;
        serialize_seq(Option<usize>) -> Never;
        serialize_tuple(usize) -> Never;
        serialize_tuple_struct(&'static str, usize) -> Never;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Never;
        serialize_map(Option<usize>) -> Never;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Never;
    }
    fn serialize_f64(self, v: f64) -> Result<JsValue, Unwritten> {
        Ok(JsValue::from_f64(v))
    }
    fn serialize_str(self, v: &str) -> Result<JsValue, Unwritten> {
        Ok(JsValue::from_str(v))
    }
    fn serialize_none(self) -> Result<JsValue, Unwritten> {
        Ok(JsValue::UNDEFINED)
    }
    fn serialize_some<T: serde::Serialize + ?Sized>(self, v: &T) -> Result<JsValue, Unwritten> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<JsValue, Unwritten> {
        Ok(JsValue::UNDEFINED)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<JsValue, Unwritten> {
        Ok(JsValue::UNDEFINED)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<JsValue, Unwritten> {
        Ok(key(variant))
    }
    fn serialize_newtype_struct<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<JsValue, Unwritten> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<JsValue, Unwritten> {
        Err(Unwritten)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Obj, Unwritten> {
        Ok(Obj::new())
    }
}

impl serde::ser::SerializeStruct for Obj {
    type Ok = JsValue;
    type Error = Unwritten;

    fn serialize_field<T: serde::Serialize + ?Sized>(
        &mut self,
        k: &'static str,
        v: &T,
    ) -> Result<(), Unwritten> {
        self.set(k, v.serialize(Plain)?);
        Ok(())
    }
    fn end(self) -> Result<JsValue, Unwritten> {
        Ok(self.into_js())
    }
}

/// A plain object under construction.
pub struct Obj(pub js_sys::Object);

impl Obj {
    pub fn new() -> Obj {
        Obj(js_sys::Object::new())
    }
    pub fn set(&self, k: &'static str, v: impl Into<JsValue>) -> &Self {
        let _ = js_sys::Reflect::set(&self.0, &key(k), &v.into());
        self
    }
    pub fn into_js(self) -> JsValue {
        self.0.into()
    }
}
