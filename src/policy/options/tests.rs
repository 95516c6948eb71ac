//! The options' rules, each as the README states it, through the Rust-written
//! options (`raw_options.rs`), which go through the same tables and checks
//! as what the web side reads.

use super::*;
use crate::policy::raw_options::{
    RawBreaker, RawBudget, RawCallOptions, RawClientOptions, RawConcurrency, RawHedge, RawRetry,
    RawStorage, Toggle,
};

fn client(raw: RawClientOptions) -> Result<ClientConfig> {
    ClientConfig::from_raw(&raw)
}

#[test]
fn extend_merges_over_the_parent_and_refuses_what_it_shares() {
    let parent = client(RawClientOptions {
        timeout_ms: Some(1000.0),
        retry: Toggle::On(RawRetry {
            max_attempts: Some(5.0),
            ..Default::default()
        }),
        breaker: Toggle::Off,
        ..Default::default()
    })
    .unwrap();
    let child = parent
        .extended(&RawClientOptions {
            deadline_ms: Some(3000.0),
            retry: Toggle::On(RawRetry {
                base_delay_ms: Some(10.0),
                ..Default::default()
            }),
            dedupe: Some(false),
            ..Default::default()
        })
        .unwrap();
    let r = child.retry.clone().unwrap();
    assert_eq!((r.max_attempts, r.base_delay_ms), (5, 10.0), "merged");
    assert_eq!((child.timeout_ms, child.deadline_ms), (1000.0, 3000.0));
    assert!(
        !child.dedupe && child.breaker.is_none(),
        "the rest is the parent's"
    );
    // nothing given: the parent's settings as they are
    assert_eq!(
        format!(
            "{:?}",
            parent.extended(&RawClientOptions::default()).unwrap()
        ),
        format!("{parent:?}")
    );
    let gateway = parent
        .extended(&RawClientOptions {
            gateway_timeout_ms: Some(5000.0),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(gateway.timeout_ms, 6000.0);
    let off = parent
        .extended(&RawClientOptions {
            retry: Toggle::Off,
            ..Default::default()
        })
        .unwrap();
    assert!(off.retry.is_none());
    // the shared protection cannot be changed, nor bad values given
    let refused = |raw: RawClientOptions| parent.extended(&raw).unwrap_err().option;
    assert_eq!(
        refused(RawClientOptions {
            budget: Toggle::Off,
            ..Default::default()
        }),
        "budget"
    );
    assert_eq!(
        refused(RawClientOptions {
            breaker: Toggle::On(RawBreaker::default()),
            ..Default::default()
        }),
        "breaker"
    );
    assert_eq!(
        refused(RawClientOptions {
            concurrency: Toggle::Off,
            ..Default::default()
        }),
        "concurrency"
    );
    assert_eq!(
        refused(RawClientOptions {
            storage: Toggle::Off,
            ..Default::default()
        }),
        "storage"
    );
    assert_eq!(
        refused(RawClientOptions {
            cross_tab: Some(true),
            ..Default::default()
        }),
        "crossTab"
    );
    assert_eq!(
        refused(RawClientOptions {
            timeout_ms: Some(0.0),
            ..Default::default()
        }),
        "timeoutMs"
    );
}

fn retry(raw: RawRetry) -> Result<ClientConfig> {
    client(RawClientOptions {
        retry: Toggle::On(raw),
        ..Default::default()
    })
}

fn budget(raw: RawBudget) -> Result<ClientConfig> {
    client(RawClientOptions {
        budget: Toggle::On(raw),
        ..Default::default()
    })
}

fn breaker(raw: RawBreaker) -> Result<ClientConfig> {
    client(RawClientOptions {
        breaker: Toggle::On(raw),
        ..Default::default()
    })
}

fn concurrency(raw: RawConcurrency) -> Result<ClientConfig> {
    client(RawClientOptions {
        concurrency: Toggle::On(raw),
        ..Default::default()
    })
}

fn storage(raw: RawStorage) -> Result<ClientConfig> {
    client(RawClientOptions {
        storage: Toggle::On(raw),
        ..Default::default()
    })
}

#[track_caller]
fn rejects(result: Result<ClientConfig>, option: &str) {
    match result {
        Err(e) => {
            assert_eq!(e.option, option);
            assert!(!e.reason.is_empty() && e.reason.len() < 80, "{}", e.reason);
        }
        Ok(c) => panic!("{option} accepted: {c:?}"),
    }
}

const NOT_FINITE: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

/// The reasons each rule gives, word for word (the README and the JS
/// tests show them), now that every text comes from a table.
#[test]
fn each_rule_gives_its_reason() {
    let reason = |r: Result<ClientConfig>| r.unwrap_err().reason;
    let attempts = |v| {
        retry(RawRetry {
            max_attempts: Some(v),
            ..Default::default()
        })
    };
    assert_eq!(reason(attempts(0.0)), "must be an integer from 1 to 10");
    assert_eq!(reason(attempts(f64::NAN)), "must be a finite number");
    let ratio = budget(RawBudget {
        ratio: Some(2.0),
        ..Default::default()
    });
    assert_eq!(reason(ratio), "must be from 0 to 1");
    let rate = breaker(RawBreaker {
        failure_rate: Some(0.0),
        ..Default::default()
    });
    assert_eq!(reason(rate), "must be above 0 and at most 1");
    let tiny = breaker(RawBreaker {
        failure_rate: Some(f64::from_bits(1)),
        ..Default::default()
    });
    assert_eq!(
        tiny.unwrap().breaker.unwrap().failure_rate,
        f64::from_bits(1)
    );
    let statuses = retry(RawRetry {
        statuses: Some(vec![99.0]),
        ..Default::default()
    });
    assert_eq!(reason(statuses), "must hold integers from 100 to 599");
    let methods = retry(RawRetry {
        methods: Some(vec!["a b".into()]),
        ..Default::default()
    });
    assert_eq!(reason(methods), "must hold HTTP method names");
    let jitter = retry(RawRetry {
        jitter: Some("Full".into()),
        ..Default::default()
    });
    assert_eq!(
        reason(jitter),
        "must be 'full', 'equal', 'decorrelated' or 'none'"
    );
    let mode = breaker(RawBreaker {
        mode: Some("smart".into()),
        ..Default::default()
    });
    assert_eq!(reason(mode), "must be 'binary' or 'adaptive'");
    let queue = concurrency(RawConcurrency {
        queue: Some(-1.0),
        ..Default::default()
    });
    assert_eq!(reason(queue), "must be an integer from 0 to 2147483647");
    let hedge = client(RawClientOptions {
        hedge: Toggle::On(RawHedge::default()),
        ..Default::default()
    });
    assert_eq!(reason(hedge), "is required (a number or 'p95')");
}

#[test]
fn each_table_names_a_member_once() {
    for table in [
        &CLIENT[..],
        &CALL,
        &RETRY,
        &BUDGET,
        &BREAKER,
        &CONCURRENCY,
        &STORAGE,
        &HEDGE,
    ] {
        for (i, opt) in table.iter().enumerate() {
            assert!(
                table.iter().skip(i + 1).all(|o| o.key != opt.key),
                "{}",
                opt.key
            );
        }
    }
    // The Rust-written options give as many members as the tables read.
    assert_eq!(RawClientOptions::default().members().len(), CLIENT.len());
    assert_eq!(RawCallOptions::default().members().len(), CALL.len());
    assert_eq!(RawRetry::default().members().len(), RETRY.len());
    assert_eq!(RawBudget::default().members().len(), BUDGET.len());
    assert_eq!(RawBreaker::default().members().len(), BREAKER.len());
    assert_eq!(RawConcurrency::default().members().len(), CONCURRENCY.len());
    assert_eq!(RawStorage::default().members().len(), STORAGE.len());
    assert_eq!(RawHedge::default().members().len(), HEDGE.len());
}

/// `timeoutMs` -> `timeout_ms`.
fn snake(key: &str) -> String {
    key.chars()
        .flat_map(|c| {
            let lower = c.to_ascii_lowercase();
            (c.is_ascii_uppercase().then_some('_').into_iter()).chain([lower])
        })
        .collect()
}

#[test]
fn fields_follow_their_tables() {
    // Each table's members are read by name: field i is row i's key, so
    // a row written under another's field (two durations swapped) fails here.
    use crate::policy::breaker::BreakerMembers;
    use crate::policy::budget::BudgetMembers;
    use crate::policy::limiter::ConcurrencyMembers;
    use crate::policy::retry::RetryMembers;
    let tables: [(&[&str], &[Opt]); 8] = [
        (ClientMembers::<Given>::FIELDS, &CLIENT),
        (CallMembers::<Given>::FIELDS, &CALL),
        (RetryMembers::<Given>::FIELDS, &RETRY),
        (BudgetMembers::<Given>::FIELDS, &BUDGET),
        (BreakerMembers::<Given>::FIELDS, &BREAKER),
        (ConcurrencyMembers::<Given>::FIELDS, &CONCURRENCY),
        (StorageMembers::<Given>::FIELDS, &STORAGE),
        (HedgeMembers::<Given>::FIELDS, &HEDGE),
    ];
    for (fields, table) in tables {
        let keys: Vec<String> = table.iter().map(|o| snake(o.key)).collect();
        assert_eq!(fields, keys.as_slice());
    }
    assert_eq!(snake("maxRetryAfterMs"), "max_retry_after_ms");
    // Members not as many as the table's rows are never named.
    let members = RawClientOptions::default().members();
    assert!(ClientMembers::of(&members).is_some());
    assert!(ClientMembers::of(&members[1..]).is_none());
    assert!(ClientMembers::of(&[members.clone(), vec![Given::Absent]].concat()).is_none());
    let short = ClientConfig::from_members(&members[1..], Host::Page).unwrap_err();
    assert_eq!(
        (short.option.as_str(), short.reason.as_str()),
        ("options", "could not be read")
    );
    let budget = ClientMembers {
        budget: Given::Group(vec![Given::Num(0.5)]),
        ..Default::default()
    };
    let short = ClientConfig::from_members(&budget.into_vec(), Host::Page).unwrap_err();
    assert_eq!(short.option, "budget");
}

#[test]
fn empty_options_give_api_defaults() {
    let c = client(RawClientOptions::default()).unwrap();
    assert_eq!(c, ClientConfig::default());
    assert_eq!(c.timeout_ms, 6000.0);
    assert_eq!(c.deadline_ms, 20_000.0);
    let r = c.retry.as_ref().unwrap();
    assert_eq!(r.max_attempts, 3);
    assert_eq!((r.base_delay_ms, r.max_delay_ms), (1000.0, 8000.0));
    assert_eq!(r.jitter, Jitter::Full);
    assert_eq!(r.statuses, vec![408, 429, 500, 502, 503, 504]);
    assert_eq!(r.methods, vec!["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
    assert!(r.retry_after);
    assert_eq!(r.max_retry_after_ms, 30_000.0);
    let b = c.budget.as_ref().unwrap();
    assert_eq!((b.ratio, b.min_retries, b.window_ms), (0.1, 3, 10_000.0));
    let br = c.breaker.as_ref().unwrap();
    assert_eq!(br.window_ms, 60_000.0);
    assert_eq!(br.min_samples, 10);
    assert_eq!(br.failure_rate, 0.5);
    assert_eq!(br.consecutive_failures, Some(3));
    assert_eq!((br.open_ms, br.max_open_ms), (2000.0, 2000.0));
    assert_eq!(br.half_open_probes, 1);
    assert_eq!(c.concurrency, Some(LimiterConfig { max: 6, queue: 100 }));
    assert!(c.dedupe);
    assert!(c.rate_limit);
    let s = c.storage.as_ref().unwrap();
    assert_eq!(
        (s.prefix.as_str(), s.max_entry_bytes),
        ("stormguard:", 262_144)
    );
}

/// README, "Server clients": without a `window`, 256 slots and a queue
/// of 10000, and no breaker opening on one user's failures in a row;
/// what is given explicitly wins, member by member, and the rest of the
/// defaults are a page's.
#[test]
fn a_server_starts_from_its_own_default_set() {
    let server = |raw: RawClientOptions| ClientConfig::from_members(&raw.members(), Host::Server);
    let c = server(RawClientOptions::default()).unwrap();
    assert_eq!(
        c.concurrency,
        Some(LimiterConfig {
            max: 256,
            queue: 10_000
        })
    );
    let br = c.breaker.clone().unwrap();
    assert_eq!(br.consecutive_failures, None);
    let page = ClientConfig::default();
    let same = ClientConfig {
        concurrency: page.concurrency.clone(),
        breaker: Some(BreakerConfig {
            consecutive_failures: Some(3),
            ..br
        }),
        ..c.clone()
    };
    assert_eq!(same, page, "only the two defaults differ");
    // Given members win; the others stay the server's.
    let given = server(RawClientOptions {
        concurrency: Toggle::On(RawConcurrency {
            max: Some(8.0),
            ..Default::default()
        }),
        breaker: Toggle::On(RawBreaker {
            min_samples: Some(4.0),
            ..Default::default()
        }),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        given.concurrency,
        Some(LimiterConfig {
            max: 8,
            queue: 10_000
        })
    );
    let br = given.breaker.unwrap();
    assert_eq!((br.min_samples, br.consecutive_failures), (4, None));
    let consecutive = server(RawClientOptions {
        breaker: Toggle::On(RawBreaker {
            consecutive_failures: Toggle::On(3.0),
            ..Default::default()
        }),
        concurrency: Toggle::Off,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(consecutive.breaker.unwrap().consecutive_failures, Some(3));
    assert_eq!(consecutive.concurrency, None);
    // A page's set is unchanged by the options given alike.
    let page_breaker = client(RawClientOptions {
        breaker: Toggle::On(RawBreaker {
            min_samples: Some(4.0),
            ..Default::default()
        }),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(page_breaker.breaker.unwrap().consecutive_failures, Some(3));
    // A derived client keeps its root's set.
    let child = c.extended(&RawClientOptions::default()).unwrap();
    assert_eq!(child.concurrency, c.concurrency);
}

#[test]
fn empty_sub_objects_give_defaults_too() {
    let c = client(RawClientOptions {
        retry: Toggle::On(RawRetry::default()),
        budget: Toggle::On(RawBudget::default()),
        breaker: Toggle::On(RawBreaker::default()),
        concurrency: Toggle::On(RawConcurrency::default()),
        storage: Toggle::On(RawStorage::default()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(c, ClientConfig::default());
}

#[test]
fn false_turns_sub_options_off() {
    let c = client(RawClientOptions {
        retry: Toggle::Off,
        budget: Toggle::Off,
        breaker: Toggle::Off,
        concurrency: Toggle::Off,
        storage: Toggle::Off,
        dedupe: Some(false),
        rate_limit: Some(false),
        ..Default::default()
    })
    .unwrap();
    assert!(!c.rate_limit);
    assert_eq!(c.retry, None);
    assert_eq!(c.budget, None);
    assert_eq!(c.breaker, None);
    assert_eq!(c.concurrency, None);
    assert_eq!(c.storage, None);
    assert!(!c.dedupe);
    assert_eq!(c.failure_statuses(), DEFAULT_STATUSES);
}

#[test]
fn failure_statuses_follow_retry_statuses() {
    let c = retry(RawRetry {
        statuses: Some(vec![503.0]),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(c.failure_statuses(), [503]);
}

#[test]
fn retry_off_keeps_default_statuses() {
    let off = RetryConfig::off();
    assert_eq!(off.max_attempts, 1);
    assert_eq!(off.statuses, DEFAULT_STATUSES);
}

#[test]
fn timeouts_and_deadlines() {
    let c = client(RawClientOptions {
        timeout_ms: Some(1.0),
        deadline_ms: Some(MAX_DURATION_MS),
        ..Default::default()
    })
    .unwrap();
    assert_eq!((c.timeout_ms, c.deadline_ms), (1.0, MAX_DURATION_MS));
    for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(
            client(RawClientOptions {
                timeout_ms: Some(bad),
                ..Default::default()
            }),
            "timeoutMs",
        );
        rejects(
            client(RawClientOptions {
                deadline_ms: Some(bad),
                ..Default::default()
            }),
            "deadlineMs",
        );
    }
}

#[test]
fn gateway_timeout_derives_timeout() {
    let gw = |g: f64, t: Option<f64>| {
        client(RawClientOptions {
            gateway_timeout_ms: Some(g),
            timeout_ms: t,
            ..Default::default()
        })
    };
    assert_eq!(gw(5000.0, None).unwrap().timeout_ms, 6000.0);
    assert_eq!(gw(1.0, None).unwrap().timeout_ms, 2.0);
    assert_eq!(gw(3.0, None).unwrap().timeout_ms, 4.0);
    assert_eq!(gw(10.0, None).unwrap().timeout_ms, 12.0);
    assert_eq!(gw(5000.0, Some(100.0)).unwrap().timeout_ms, 100.0);
    // 1_789_569_706 * 1.2 = 2_147_483_647.2 -> ceil passes 2^31-1.
    assert_eq!(
        gw(1_789_569_705.0, None).unwrap().timeout_ms,
        2_147_483_646.0
    );
    rejects(gw(1_789_569_706.0, None), "gatewayTimeoutMs");
    rejects(gw(MAX_DURATION_MS, None), "gatewayTimeoutMs");
    for bad in [0.0, -5.0, 2.5, f64::NAN] {
        rejects(gw(bad, None), "gatewayTimeoutMs");
        rejects(gw(bad, Some(100.0)), "gatewayTimeoutMs");
    }
}

#[test]
fn max_attempts_is_1_to_10() {
    for ok in [1.0, 10.0] {
        let c = retry(RawRetry {
            max_attempts: Some(ok),
            ..Default::default()
        });
        assert_eq!(c.unwrap().retry.unwrap().max_attempts, ok as u32);
    }
    for bad in [0.0, 11.0, 2.5, -1.0].into_iter().chain(NOT_FINITE) {
        rejects(
            retry(RawRetry {
                max_attempts: Some(bad),
                ..Default::default()
            }),
            "retry.maxAttempts",
        );
    }
}

#[test]
fn retry_durations_are_integers_from_0() {
    let c = retry(RawRetry {
        base_delay_ms: Some(0.0),
        max_delay_ms: Some(0.0),
        max_retry_after_ms: Some(MAX_DURATION_MS),
        ..Default::default()
    })
    .unwrap()
    .retry
    .unwrap();
    assert_eq!((c.base_delay_ms, c.max_delay_ms), (0.0, 0.0));
    assert_eq!(c.max_retry_after_ms, MAX_DURATION_MS);
    for bad in [-1.0, 0.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        let cases = [
            (
                RawRetry {
                    base_delay_ms: Some(bad),
                    ..Default::default()
                },
                "retry.baseDelayMs",
            ),
            (
                RawRetry {
                    max_delay_ms: Some(bad),
                    ..Default::default()
                },
                "retry.maxDelayMs",
            ),
            (
                RawRetry {
                    max_retry_after_ms: Some(bad),
                    ..Default::default()
                },
                "retry.maxRetryAfterMs",
            ),
        ];
        for (raw, option) in cases {
            rejects(retry(raw), option);
        }
    }
}

#[test]
fn jitter_names() {
    for (name, j) in [
        ("full", Jitter::Full),
        ("equal", Jitter::Equal),
        ("decorrelated", Jitter::Decorrelated),
        ("none", Jitter::None),
    ] {
        let c = retry(RawRetry {
            jitter: Some(name.into()),
            ..Default::default()
        });
        assert_eq!(c.unwrap().retry.unwrap().jitter, j);
    }
    for bad in ["", "Full", "exponential"] {
        rejects(
            retry(RawRetry {
                jitter: Some(bad.into()),
                ..Default::default()
            }),
            "retry.jitter",
        );
    }
}

#[test]
fn statuses_are_integers_100_to_599() {
    let c = retry(RawRetry {
        statuses: Some(vec![100.0, 599.0]),
        ..Default::default()
    });
    assert_eq!(c.unwrap().retry.unwrap().statuses, vec![100, 599]);
    let empty = retry(RawRetry {
        statuses: Some(vec![]),
        ..Default::default()
    });
    assert!(empty.unwrap().retry.unwrap().statuses.is_empty());
    for bad in [99.0, 600.0, 503.5, -503.0].into_iter().chain(NOT_FINITE) {
        rejects(
            retry(RawRetry {
                statuses: Some(vec![503.0, bad]),
                ..Default::default()
            }),
            "retry.statuses",
        );
    }
}

#[test]
fn methods_are_tokens_kept_uppercase() {
    let c = retry(RawRetry {
        methods: Some(vec!["get".into(), "Post".into(), "M-SEARCH".into()]),
        ..Default::default()
    });
    assert_eq!(
        c.unwrap().retry.unwrap().methods,
        vec!["GET", "POST", "M-SEARCH"]
    );
    for bad in ["", "GET POST", "GÉT", "a,b", "x\n"] {
        rejects(
            retry(RawRetry {
                methods: Some(vec!["GET".into(), bad.into()]),
                ..Default::default()
            }),
            "retry.methods",
        );
    }
}

#[test]
fn huge_input_is_not_echoed() {
    let huge = "x y".repeat(100_000);
    let e = retry(RawRetry {
        methods: Some(vec![huge.clone()]),
        jitter: None,
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.reason.len() < 80 && e.to_string().len() < 120);
    let e = retry(RawRetry {
        jitter: Some(huge),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.reason.len() < 80);
}

#[test]
fn budget_rules() {
    let c = budget(RawBudget {
        ratio: Some(0.0),
        min_retries: Some(0.0),
        window_ms: Some(1.0),
    })
    .unwrap()
    .budget
    .unwrap();
    assert_eq!((c.ratio, c.min_retries, c.window_ms), (0.0, 0, 1.0));
    // A duration may be 0 (README, "budget.windowMs"): the ring takes it as its shortest, 1 ms.
    let zero = |window_ms| RawBudget {
        window_ms: Some(window_ms),
        ..Default::default()
    };
    assert_eq!(budget(zero(0.0)).unwrap().budget.unwrap().window_ms, 0.0);
    assert_eq!(
        budget(RawBudget {
            ratio: Some(1.0),
            ..Default::default()
        })
        .unwrap()
        .budget
        .unwrap()
        .ratio,
        1.0
    );
    for bad in [-0.1, 1.1].into_iter().chain(NOT_FINITE) {
        rejects(
            budget(RawBudget {
                ratio: Some(bad),
                ..Default::default()
            }),
            "budget.ratio",
        );
    }
    for bad in [-1.0, 1.5].into_iter().chain(NOT_FINITE) {
        rejects(
            budget(RawBudget {
                min_retries: Some(bad),
                ..Default::default()
            }),
            "budget.minRetries",
        );
    }
    for bad in [-1.0, 1.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(
            budget(RawBudget {
                window_ms: Some(bad),
                ..Default::default()
            }),
            "budget.windowMs",
        );
    }
}

#[test]
fn breaker_counts_are_integers_from_1() {
    let c = breaker(RawBreaker {
        min_samples: Some(1.0),
        consecutive_failures: Toggle::On(1.0),
        half_open_probes: Some(1.0),
        ..Default::default()
    })
    .unwrap()
    .breaker
    .unwrap();
    assert_eq!(
        (c.min_samples, c.consecutive_failures, c.half_open_probes),
        (1, Some(1), 1)
    );
    for bad in [0.0, -1.0, 2.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        let cases = [
            (
                RawBreaker {
                    min_samples: Some(bad),
                    ..Default::default()
                },
                "breaker.minSamples",
            ),
            (
                RawBreaker {
                    consecutive_failures: Toggle::On(bad),
                    ..Default::default()
                },
                "breaker.consecutiveFailures",
            ),
            (
                RawBreaker {
                    half_open_probes: Some(bad),
                    ..Default::default()
                },
                "breaker.halfOpenProbes",
            ),
        ];
        for (raw, option) in cases {
            rejects(breaker(raw), option);
        }
    }
    // The window is a duration: 0 is valid (the ring's shortest, 1 ms).
    let window = |window_ms| RawBreaker {
        window_ms: Some(window_ms),
        ..Default::default()
    };
    assert_eq!(
        breaker(window(0.0)).unwrap().breaker.unwrap().window_ms,
        0.0
    );
    for bad in [-1.0, 2.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(breaker(window(bad)), "breaker.windowMs");
    }
}

#[test]
fn consecutive_failures_defaults_to_3_and_false_turns_it_off() {
    let run = |t: Toggle<f64>| {
        breaker(RawBreaker {
            consecutive_failures: t,
            ..Default::default()
        })
        .unwrap()
        .breaker
        .unwrap()
        .consecutive_failures
    };
    assert_eq!(run(Toggle::Default), Some(3));
    assert_eq!(run(Toggle::Off), None);
    assert_eq!(run(Toggle::On(5.0)), Some(5));
    // `false` turns off only the count: the failure-rate rule stays on.
    let c = breaker(RawBreaker {
        consecutive_failures: Toggle::Off,
        ..Default::default()
    })
    .unwrap()
    .breaker
    .unwrap();
    assert_eq!((c.failure_rate, c.min_samples), (0.5, 10));
}

#[test]
fn failure_rate_is_above_0_at_most_1() {
    let rate = |r: f64| {
        breaker(RawBreaker {
            failure_rate: Some(r),
            ..Default::default()
        })
    };
    assert_eq!(rate(1.0).unwrap().breaker.unwrap().failure_rate, 1.0);
    assert_eq!(rate(0.01).unwrap().breaker.unwrap().failure_rate, 0.01);
    for bad in [0.0, -0.5, 1.01].into_iter().chain(NOT_FINITE) {
        rejects(rate(bad), "breaker.failureRate");
    }
}

#[test]
fn open_periods() {
    let open = |o: Option<f64>, m: Option<f64>| {
        breaker(RawBreaker {
            open_ms: o,
            max_open_ms: m,
            ..Default::default()
        })
    };
    let c = open(Some(0.0), Some(0.0)).unwrap().breaker.unwrap();
    assert_eq!((c.open_ms, c.max_open_ms), (0.0, 0.0));
    let c = open(Some(60_000.0), None).unwrap().breaker.unwrap();
    assert_eq!((c.open_ms, c.max_open_ms), (60_000.0, 60_000.0));
    let c = open(Some(1000.0), None).unwrap().breaker.unwrap();
    assert_eq!((c.open_ms, c.max_open_ms), (1000.0, 2000.0));
    let c = open(None, Some(30_000.0)).unwrap().breaker.unwrap();
    assert_eq!((c.open_ms, c.max_open_ms), (2000.0, 30_000.0));
    rejects(open(Some(6000.0), Some(5999.0)), "breaker.maxOpenMs");
    rejects(open(None, Some(1999.0)), "breaker.maxOpenMs");
    for bad in [-1.0, 0.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(open(Some(bad), None), "breaker.openMs");
        rejects(open(None, Some(bad)), "breaker.maxOpenMs");
    }
}

#[test]
fn concurrency_rules() {
    let c = concurrency(RawConcurrency {
        max: Some(1.0),
        queue: Some(0.0),
    })
    .unwrap();
    assert_eq!(c.concurrency, Some(LimiterConfig { max: 1, queue: 0 }));
    for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(
            concurrency(RawConcurrency {
                max: Some(bad),
                ..Default::default()
            }),
            "concurrency.max",
        );
    }
    for bad in [-1.0, 1.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(
            concurrency(RawConcurrency {
                queue: Some(bad),
                ..Default::default()
            }),
            "concurrency.queue",
        );
    }
}

#[test]
fn storage_rules() {
    let c = storage(RawStorage {
        prefix: Some(String::new()),
        max_entry_bytes: Some(1.0),
    })
    .unwrap()
    .storage
    .unwrap();
    assert_eq!((c.prefix.as_str(), c.max_entry_bytes), ("", 1));
    for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
        .into_iter()
        .chain(NOT_FINITE)
    {
        rejects(
            storage(RawStorage {
                max_entry_bytes: Some(bad),
                ..Default::default()
            }),
            "storage.maxEntryBytes",
        );
    }
}

fn call(client: &ClientConfig, raw: RawCallOptions) -> Result<CallConfig> {
    CallConfig::resolve(client, &raw)
}

#[test]
fn call_inherits_client_settings() {
    let c = retry(RawRetry {
        max_attempts: Some(5.0),
        ..Default::default()
    })
    .unwrap();
    let k = call(&c, RawCallOptions::default()).unwrap();
    assert_eq!((k.timeout_ms, k.deadline_ms), (6000.0, 20_000.0));
    assert_eq!(k.retry, c.retry);
    assert!(k.rate_limit);
    let off = ClientConfig {
        rate_limit: false,
        ..c
    };
    assert!(!call(&off, RawCallOptions::default()).unwrap().rate_limit);
}

#[test]
fn hedge_is_off_by_default_and_checked_when_given() {
    let client = |h: Toggle<RawHedge>| {
        ClientConfig::from_raw(&RawClientOptions {
            hedge: h,
            ..Default::default()
        })
    };
    assert_eq!(client(Toggle::Default).unwrap().hedge, None);
    assert_eq!(client(Toggle::Off).unwrap().hedge, None);
    let on = |after_ms: Option<f64>, after_p95: bool, max: Option<f64>| {
        client(Toggle::On(RawHedge {
            after_ms,
            after_p95,
            max,
        }))
    };
    assert_eq!(
        on(Some(200.0), false, None).unwrap().hedge,
        Some(HedgeConfig {
            after: HedgeAfter::Ms(200.0),
            max: 1
        })
    );
    assert_eq!(
        on(None, true, Some(2.0)).unwrap().hedge,
        Some(HedgeConfig {
            after: HedgeAfter::P95,
            max: 2
        })
    );
    for (after, max, option) in [
        (None, None, "hedge.afterMs"),
        (Some(-1.0), None, "hedge.afterMs"),
        (Some(1.5), None, "hedge.afterMs"),
        (Some(f64::NAN), None, "hedge.afterMs"),
        (Some(10.0), Some(0.0), "hedge.max"),
        (Some(10.0), Some(10.0), "hedge.max"),
    ] {
        assert_eq!(on(after, false, max).unwrap_err().option, option);
    }
}

#[test]
fn a_calls_hedge_goes_over_the_clients() {
    let c = ClientConfig::from_raw(&RawClientOptions {
        hedge: Toggle::On(RawHedge {
            after_ms: Some(100.0),
            max: Some(2.0),
            ..Default::default()
        }),
        ..Default::default()
    })
    .unwrap();
    let with = |h: Toggle<RawHedge>| {
        call(
            &c,
            RawCallOptions {
                hedge: h,
                ..Default::default()
            },
        )
        .unwrap()
        .hedge
    };
    assert_eq!(with(Toggle::Default), c.hedge);
    assert_eq!(with(Toggle::Off), None);
    let p95 = with(Toggle::On(RawHedge {
        after_p95: true,
        ..Default::default()
    }));
    assert_eq!(
        p95,
        Some(HedgeConfig {
            after: HedgeAfter::P95,
            max: 2
        })
    );
}

#[test]
fn call_retry_merges_field_by_field() {
    let c = retry(RawRetry {
        max_attempts: Some(5.0),
        jitter: Some("none".into()),
        ..Default::default()
    })
    .unwrap();
    let k = call(
        &c,
        RawCallOptions {
            timeout_ms: Some(100.0),
            deadline_ms: Some(500.0),
            retry: Toggle::On(RawRetry {
                base_delay_ms: Some(10.0),
                ..Default::default()
            }),
            wait_for_online: Some(false),
            hedge: Toggle::Default,
            rate_limit: Some(false),
        },
    )
    .unwrap();
    assert!(!k.wait_for_online);
    assert!(!k.rate_limit);
    assert_eq!((k.timeout_ms, k.deadline_ms), (100.0, 500.0));
    let r = k.retry.unwrap();
    assert_eq!(
        (r.max_attempts, r.jitter, r.base_delay_ms),
        (5, Jitter::None, 10.0)
    );
}

#[test]
fn call_retry_over_client_retry_off_uses_defaults() {
    let c = client(RawClientOptions {
        retry: Toggle::Off,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(call(&c, RawCallOptions::default()).unwrap().retry, None);
    let k = call(
        &c,
        RawCallOptions {
            retry: Toggle::On(RawRetry {
                max_attempts: Some(2.0),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let expected = RetryConfig {
        max_attempts: 2,
        ..RetryConfig::default()
    };
    assert_eq!(k.retry, Some(expected));
}

#[test]
fn call_retry_false_turns_retry_off() {
    let k = call(
        &ClientConfig::default(),
        RawCallOptions {
            retry: Toggle::Off,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(k.retry, None);
}

#[test]
fn call_options_are_validated() {
    let d = ClientConfig::default();
    for bad in [0.0, 1.5, -1.0, MAX_DURATION_MS + 1.0, f64::NAN] {
        let e = call(
            &d,
            RawCallOptions {
                timeout_ms: Some(bad),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.option, "timeoutMs");
        let e = call(
            &d,
            RawCallOptions {
                deadline_ms: Some(bad),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.option, "deadlineMs");
    }
    let e = call(
        &d,
        RawCallOptions {
            retry: Toggle::On(RawRetry {
                max_attempts: Some(0.0),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.option, "retry.maxAttempts");
}

#[test]
fn breaker_mode_and_k() {
    let c = breaker(RawBreaker {
        mode: Some("adaptive".into()),
        ..RawBreaker::default()
    })
    .unwrap();
    assert_eq!(c.breaker.unwrap().adaptive_k, Some(DEFAULT_ADAPTIVE_K));
    let c = breaker(RawBreaker {
        mode: Some("binary".into()),
        k: Some(3.0),
        ..RawBreaker::default()
    })
    .unwrap();
    assert_eq!(c.breaker.unwrap().adaptive_k, None);
    for (raw, option) in [
        (
            RawBreaker {
                mode: Some("smart".into()),
                ..RawBreaker::default()
            },
            "breaker.mode",
        ),
        (
            RawBreaker {
                mode: Some("adaptive".into()),
                k: Some(0.5),
                ..RawBreaker::default()
            },
            "breaker.k",
        ),
        (
            RawBreaker {
                mode: Some("adaptive".into()),
                k: Some(f64::NAN),
                ..RawBreaker::default()
            },
            "breaker.k",
        ),
    ] {
        assert_eq!(breaker(raw).unwrap_err().option, option);
    }
}
