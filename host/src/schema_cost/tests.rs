//! Unit tests of the schema cost bound: data-driven checks of what each
//! keyword costs, and the schemas that must be refused.

use super::*;
use crate::arguments::MAX_ARGUMENT_DEPTH;
use serde_json::json;

/// What [`check`] expects: accepted at most this cost, or refused with
/// this problem at this path.
enum Expect {
    AtMost(u64),
    Refused(&'static str, fn(&Problem) -> bool),
}
use Expect::{AtMost, Refused};

fn check(schema: Value, expect: Expect) {
    let got = cost(&schema, MAX_ARGUMENT_DEPTH);
    match (&got, expect) {
        (Ok(cost), AtMost(max)) => assert!(*cost <= max, "{schema}: cost {cost} > {max}"),
        (Err(err), Refused(path, problem)) => {
            assert_eq!(err.path, path, "{schema}: {err}");
            assert!(problem(&err.problem), "{schema}: {err}");
        }
        _ => panic!("{schema}: got {got:?}"),
    }
}

fn too_costly(problem: &Problem) -> bool {
    matches!(problem, Problem::TooCostly { cost } if *cost > MAX_SCHEMA_COST)
}

/// `levels` `$defs`, each evaluating the next `fan` times.
fn fan_out(levels: usize, fan: usize, keyword: &str) -> Value {
    let mut defs = Map::new();
    for level in 0..levels {
        let next = json!({"$ref": format!("#/$defs/a{}", level + 1)});
        defs.insert(format!("a{level}"), json!({ keyword: vec![next; fan] }));
    }
    defs.insert(format!("a{levels}"), json!({"type": "string"}));
    json!({"type": "object", "$ref": "#/$defs/a0", "$defs": defs})
}

#[test]
fn shapes() {
    check(json!(true), AtMost(1));
    check(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}), AtMost(16));
    // Fan-out through every in-place applicator is refused where it
    // first exceeds the bound (2^12 > 4096 at a0 for 13 levels).
    for keyword in ["allOf", "anyOf", "oneOf"] {
        check(fan_out(40, 2, keyword), Refused("/$defs/a30", too_costly));
    }
    check(fan_out(5, 2, "allOf"), AtMost(256));
    // The same through `not`, `if`/`then`/`else` and dependentSchemas.
    let mut defs = Map::new();
    for level in 0..40 {
        let next = json!({"$ref": format!("#/$defs/n{}", level + 1)});
        defs.insert(
            format!("n{level}"),
            json!({"if": next, "then": next, "else": next, "not": next, "dependentSchemas": {"x": next}}),
        );
    }
    defs.insert("n40".into(), json!({}));
    check(json!({"$ref": "#/$defs/n0", "$defs": defs}), Refused("/$defs/n35", too_costly));
    // A chain of references without fan-out is linear.
    let mut defs = Map::new();
    for level in 0..200 {
        defs.insert(format!("c{level}"), json!({"$ref": format!("#/$defs/c{}", level + 1)}));
    }
    defs.insert("c200".into(), json!({"type": "integer"}));
    check(json!({"$ref": "#/$defs/c0", "$defs": defs}), AtMost(1000));
    // Cycles that do not descend never end; cycles that descend are
    // bounded by the instance depth.
    check(
        json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
        Refused("/$defs/a/allOf/0/$ref", |p| *p == Problem::Cycle),
    );
    check(json!({"$ref": "#"}), Refused("/$ref", |p| *p == Problem::Cycle));
    check(json!({"$dynamicAnchor": "x", "$dynamicRef": "#x"}), Refused("/$dynamicRef", |p| *p == Problem::Cycle));
    check(json!({"$recursiveRef": "#"}), Refused("/$recursiveRef", |p| *p == Problem::Cycle));
    let tree = json!({"type": "object", "properties": {"left": {"$ref": "#"}, "right": {"$ref": "#"}, "items": {"type": "array", "items": {"$ref": "#"}}}});
    check(tree, AtMost(64));
    // A descending cycle that fans out in place at every level
    // multiplies per level: 2^64 at the root.
    check(
        json!({"properties": {"a": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}}}),
        Refused("/properties/a", too_costly),
    );
    // Anchors, percent-escapes, the root $id.
    check(
        json!({"$id": "https://example.com/s", "$defs": {"a b": {"$anchor": "x", "type": "string"}}, "properties": {"p": {"$ref": "#x"}, "q": {"$ref": "https://example.com/s#/$defs/a%20b"}}}),
        AtMost(32),
    );
    check(
        json!({"properties": {"p": {"$ref": "other.json#/x"}}}),
        Refused("/properties/p/$ref", |p| matches!(p, Problem::Unresolvable { .. })),
    );
    check(
        json!({"properties": {"p": {"$ref": "#/$defs/missing"}}}),
        Refused("/properties/p/$ref", |p| matches!(p, Problem::Unresolvable { .. })),
    );
    check(
        json!({"properties": {"p": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}),
        Refused("/properties/p/$ref", |p| matches!(p, Problem::Unresolvable { .. })),
    );
    check(json!({"$defs": {"a": {"$id": "https://other.example/"}}}), Refused("/$defs/a", |p| *p == Problem::NestedId));
    // Values are not schemas: an `$id` inside `const` is data.
    check(json!({"const": {"$id": "https://other.example/"}}), AtMost(16));
    // Keywords whose work grows with the instance are weighted.
    check(json!({"type": "string", "pattern": "^a+$"}), AtMost(4 + PATTERN_WEIGHT));
    check(json!({"enum": (0..5000).collect::<Vec<_>>()}), Refused("", too_costly));
    check(json!({"const": "x".repeat(100_000)}), Refused("", too_costly));
    check(json!({"required": vec!["a"; 5000]}), Refused("", too_costly));
    check(json!({"patternProperties": {"a": {}, "b": {}}}), AtMost(4 + 2 * (PATTERN_WEIGHT + 1) + 1));
    // uniqueItems is paid by every descendant, once per evaluation.
    let unique = json!({"type": "array", "uniqueItems": true, "items": {"$ref": "#"}});
    check(unique, AtMost(UNIQUE_WEIGHT * 70 + 10));
    // unevaluated* re-walks the in-place subschemas per level.
    let nested =
        json!({"allOf": [{"allOf": [{"allOf": [{"properties": {"a": {}}}]}]}], "unevaluatedProperties": false});
    let plain = json!({"allOf": [{"allOf": [{"allOf": [{"properties": {"a": {}}}]}]}]});
    assert!(cost(&nested, 64).unwrap() >= 4 * cost(&plain, 64).unwrap());
    // Too deep a chain of references is refused, not overflowed.
    let mut defs = Map::new();
    for level in 0..(MAX_EVALUATION_NESTING + 10) {
        defs.insert(format!("d{level}"), json!({"$ref": format!("#/$defs/d{}", level + 1)}));
    }
    defs.insert(format!("d{}", MAX_EVALUATION_NESTING + 10), json!({}));
    let got = cost(&json!({"$ref": "#/$defs/d0", "$defs": defs}), 64).unwrap_err();
    assert_eq!(got.problem, Problem::TooComplex, "{got}");
}

#[test]
fn fan_out_error_names_path_cost_and_bound() {
    let err = cost(&fan_out(40, 2, "allOf"), 64).unwrap_err().to_string();
    assert!(err.contains("/$defs/a30"), "{err}");
    assert!(err.contains("MAX_SCHEMA_COST = 4096"), "{err}");
    assert!(err.contains("8186 work units"), "{err}");
}
