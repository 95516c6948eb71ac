//! Options as data: each option's name, the JS type it takes and the rule
//! its value follows, in one static table per options object. The web
//! side reads an object by walking its table ([`Kind`] says how to read a
//! member and what a value of the wrong type is told); [`check`] walks the
//! same table over what was read ([`Rule`]: ranges and names), so no
//! option's name or error text is written twice, and no option has code of
//! its own but for rules between options (see `options.rs`).

use crate::text::{cat, decimal};
use std::fmt;

/// The largest duration accepted, 2^31-1 ms (about 24.8 days): the longest
/// delay `setTimeout` honours.
pub const MAX_DURATION_MS: f64 = 2_147_483_647.0;

/// An invalid option: `option` is its camelCase dotted path
/// (`"retry.maxAttempts"`), `reason` a short sentence that never repeats the input.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionsError {
    pub option: String,
    pub reason: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid option {}: {}", self.option, self.reason)
    }
}

impl std::error::Error for OptionsError {}

impl OptionsError {
    /// The one way to build one, core and web side alike.
    pub fn new(option: &str, reason: &str) -> OptionsError {
        OptionsError {
            option: option.to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// For the member `key` of the object at `prefix` ("" at the top).
    pub fn at(prefix: &str, key: &str, reason: &str) -> OptionsError {
        OptionsError::new(&dotted(prefix, key), reason)
    }
}

type Result<T> = std::result::Result<T, OptionsError>;

/// Members that are not as many as their table's: never read so.
pub fn unread(option: &str) -> OptionsError {
    OptionsError::new(option, "could not be read")
}

/// `prefix.key`, or `key` at the top.
pub fn dotted(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        cat(&[prefix, ".", key])
    }
}

/// The JS type an option takes.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Num,
    /// `number | false`.
    NumOrOff,
    Bool,
    Text,
    /// A duration or `'p95'`.
    MsOrP95,
    /// An array of numbers.
    Nums,
    /// An array of strings.
    Texts,
    /// `false | object`, the object read by its own table.
    Group(&'static [Opt]),
}

impl Kind {
    /// What a value of another type is told.
    pub fn expects(self) -> &'static str {
        match self {
            Kind::Num => "must be a number",
            Kind::NumOrOff => "must be a number or false",
            Kind::Bool => "must be a boolean",
            Kind::Text => "must be a string",
            Kind::MsOrP95 => "must be a number or 'p95'",
            Kind::Nums | Kind::Texts => "must be an array",
            Kind::Group(_) => "must be false or an object",
        }
    }

    /// What an array member of another type is told.
    pub fn each(self) -> &'static str {
        match self {
            Kind::Texts => "must hold strings only",
            _ => "must hold numbers only",
        }
    }
}

/// What a value of the right type must be.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// Anything of its kind (or checked with another option: see `options.rs`).
    Any,
    /// An integer from `min` to `max` ("must be an integer from min to max").
    Int(f64, f64),
    /// A finite number from `min` to `max`, else `reason`.
    Range(f64, f64, &'static str),
    /// One of `names`, else `reason`.
    OneOf(&'static [&'static str], &'static str),
    /// Each an integer from 100 to 599.
    Statuses,
    /// Each an HTTP method token.
    Methods,
}

/// One option: its key in its object, its type and its rule.
#[derive(Clone, Copy, Debug)]
pub struct Opt {
    pub key: &'static str,
    pub kind: Kind,
    pub rule: Rule,
}

/// A duration in ms: an integer from `min` to 2^31-1.
pub const fn ms(key: &'static str, min: f64) -> Opt {
    int(key, min, MAX_DURATION_MS)
}

/// A count: an integer from `min` to `max`.
pub const fn int(key: &'static str, min: f64, max: f64) -> Opt {
    Opt {
        key,
        kind: Kind::Num,
        rule: Rule::Int(min, max),
    }
}

/// A name of `names`, else `reason`.
pub const fn one_of(
    key: &'static str,
    names: &'static [&'static str],
    reason: &'static str,
) -> Opt {
    Opt {
        key,
        kind: Kind::Text,
        rule: Rule::OneOf(names, reason),
    }
}

/// An option of `kind` with no rule of its own.
pub const fn any(key: &'static str, kind: Kind) -> Opt {
    Opt {
        key,
        kind,
        rule: Rule::Any,
    }
}

/// An options object's table and its members by name. `table!` makes the
/// table (`NAME: [Opt; n]`, its rows in the order they are read and
/// checked) and a struct with one field per row (`Members<T>`), from one
/// list: a config reads `m.ratio`, never a position, so a row cannot be
/// missed or two rows of one type swapped, and a count that does not match
/// is found where the members are named (`of`). Each field is its row's
/// key in snake_case (test `fields_follow_their_tables`, options/tests.rs).
macro_rules! table {
    ($(#[$doc:meta])* $table:ident, $members:ident { $($field:ident: $opt:expr,)* }) => {
        $(#[$doc])*
        pub const $table: [$crate::policy::option_table::Opt; [$(stringify!($field)),*].len()] =
            [$($opt,)*];

        /// The members of one object by name (`T`: `&Given` as read, or
        /// `Given` as written in Rust).
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $members<T> {
            $(pub $field: T,)*
        }

        impl<'a> $members<&'a $crate::policy::option_table::Given> {
            /// The members read by the table, named; none when they are
            /// not as many as its rows.
            pub fn of(g: &'a [$crate::policy::option_table::Given]) -> Option<Self> {
                // One pattern made of the same list as the struct: a
                // single length check, and no position written by hand.
                let [$($field),*] = g else {
                    return None;
                };
                Some($members { $($field),* })
            }
        }

        impl $members<$crate::policy::option_table::Given> {
            /// In the table's order, as the web side reads them.
            pub fn into_vec(self) -> Vec<$crate::policy::option_table::Given> {
                vec![$(self.$field,)*]
            }
        }

        impl<T> $members<T> {
            /// The fields' names, in the table's order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field),)*];
        }
    };
}
pub(crate) use table;

/// One member as read from JS, of its option's kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Given {
    #[default]
    Absent,
    /// `false` where the kind allows it.
    Off,
    Num(f64),
    Bool(bool),
    Text(String),
    Nums(Vec<f64>),
    Texts(Vec<String>),
    /// A sub-option object's members, in its table's order.
    Group(Vec<Given>),
}

impl Given {
    pub fn num(&self) -> Option<f64> {
        match self {
            Given::Num(v) => Some(*v),
            _ => None,
        }
    }

    pub fn flag(&self) -> Option<bool> {
        match self {
            Given::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Given::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// Every member of `given` (the object at `prefix`, read by `table`)
/// checked by its rule, in the table's order.
pub fn check(prefix: &str, table: &[Opt], given: &[Given]) -> Result<()> {
    for (opt, g) in table.iter().zip(given) {
        let fails = |reason: &str| OptionsError::at(prefix, opt.key, reason);
        match (opt.rule, g) {
            (Rule::Int(..) | Rule::Range(..), Given::Num(v)) if !v.is_finite() => {
                return Err(fails("must be a finite number"));
            }
            (Rule::Int(min, max), Given::Num(v)) if !is_int(*v, min, max) => {
                let (min, max) = (decimal(min as u64), decimal(max as u64));
                return Err(fails(&cat(&[
                    "must be an integer from ",
                    &min,
                    " to ",
                    &max,
                ])));
            }
            (Rule::Range(min, max, reason), Given::Num(v)) if !(min..=max).contains(v) => {
                return Err(fails(reason));
            }
            (Rule::OneOf(names, reason), Given::Text(s)) if !names.contains(&s.as_str()) => {
                return Err(fails(reason));
            }
            (Rule::Statuses, Given::Nums(list))
                if !list.iter().all(|&s| is_int(s, 100.0, 599.0)) =>
            {
                return Err(fails("must hold integers from 100 to 599"));
            }
            (Rule::Methods, Given::Texts(list)) if !list.iter().all(|m| is_token(m)) => {
                return Err(fails("must hold HTTP method names"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `v` is an integer from `min` to `max` (NaN and the infinities are not).
fn is_int(v: f64, min: f64, max: f64) -> bool {
    v.is_finite() && v.fract() == 0.0 && (min..=max).contains(&v)
}

/// An RFC 9110 token (one or more `tchar`s): what a method name must be,
/// for the `method` option and for `retry.methods` alike.
pub fn is_token(s: &str) -> bool {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !s.is_empty() && s.bytes().all(tchar)
}
