//! PostStep evaluators (DESIGN §2, kind `evaluator`): checks that run after each tool call the
//! loop executed, with the call, its tool's spec and its observation, and may halt the run for
//! the owner's review.
//!
//! A halt writes an approval row of kind `evaluator` that pins **no items** (nothing waits to
//! execute: the step already ran), checkpoints the run with the step's result already in the
//! transcript, and ends the turn. Approve: the run resumes from that result (nothing
//! re-executes; the model continues). Reject or lapse: the run stays halted, and the chat says
//! so. The row is answerable for `Ttl::evaluator` (`IRIS_EVALUATOR_TTL_SECS`, default 10 min).
//!
//! Calls that never ran (refused, denied, invalid arguments, waiting on an approval) are not
//! evaluated, and neither is a pinned call executed on resume: the owner approved that exact
//! call on its card.
//!
//! [`RuleEvaluator`] is the configurable evaluator: rules read from YAML (the server's
//! `IRIS_EVALUATOR_RULES` file), each naming which calls it looks at and a condition on the
//! observation:
//!
//! ```yaml
//! rules:
//!   - name: bulk-restore              # for logs and the audit trail
//!     tools: [restore_email]          # canonical tool names; omitted or empty: any tool
//!     effects: [write, destructive]   # omitted or empty: any effect
//!     when:                           # omitted: every matching call halts
//!       pointer: /restored            # RFC 6901 JSON pointer into the observation
//!       greater_than: 20              # or `equals: VALUE`, or `count_greater_than: N`
//!     reason: "{tool} restored {value} emails at once"   # {tool}, {value}: filled in
//! ```
//!
//! A condition holds when the pointer finds a value in the observation and: `equals` is that
//! exact JSON value; `greater_than` is less than it (numbers only); `count_greater_than` is less
//! than its length (arrays only); or, with none of the three, the value is not `null`. A
//! missing pointer never holds. The first rule (in file order) that holds halts the run.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::manifest::ToolSpec;
use crate::model::ToolCall;
use crate::plugin::CallContext;
use crate::wire::Effect;

/// One executed call, as an evaluator sees it.
pub struct ExecutedStep<'a> {
    /// The call as the model wrote it (its id and name, before resolution).
    pub call: &'a ToolCall,
    /// The resolved tool.
    pub spec: &'a ToolSpec,
    /// The normalised arguments it ran with.
    pub args: &'a Value,
    /// Its observation (always a JSON object: the result, or `{"status":"error",…}`).
    pub observation: &'a Value,
    /// The turn.
    pub ctx: &'a CallContext,
}

/// An evaluator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on with the run.
    Continue,
    /// Halt the run for the owner's review; `reason` becomes the card's title.
    Halt {
        /// Why, in words for the owner ("restore_email restored 40 emails at once").
        reason: String,
    },
}

/// A check run after each executed tool call (DESIGN §2, kind `evaluator`).
#[async_trait]
pub trait PostStepEvaluator: Send + Sync {
    /// Looks at one executed call. Must not fail: an evaluator that cannot decide answers
    /// [`Verdict::Halt`] (fail closed) or [`Verdict::Continue`] as its own rules say.
    async fn evaluate(&self, step: &ExecutedStep<'_>) -> Verdict;
}

/// A condition on the observation (see the module docs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// RFC 6901 JSON pointer into the observation (`""` is the whole observation).
    pub pointer: String,
    /// Holds when the value is exactly this JSON value.
    #[serde(default)]
    pub equals: Option<Value>,
    /// Holds when the value is a number greater than this.
    #[serde(default)]
    pub greater_than: Option<f64>,
    /// Holds when the value is an array longer than this.
    #[serde(default)]
    pub count_greater_than: Option<usize>,
}

impl Condition {
    /// The value the pointer finds, when the condition holds on `observation`.
    fn holds<'v>(&self, observation: &'v Value) -> Option<&'v Value> {
        let value = observation.pointer(&self.pointer)?;
        let holds = if let Some(expected) = &self.equals {
            value == expected
        } else if let Some(limit) = self.greater_than {
            value.as_f64().is_some_and(|n| n > limit)
        } else if let Some(limit) = self.count_greater_than {
            value.as_array().is_some_and(|a| a.len() > limit)
        } else {
            !value.is_null()
        };
        holds.then_some(value)
    }
}

/// One rule of a [`RuleEvaluator`] (see the module docs for the YAML shape).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The rule's name (unique in its file).
    pub name: String,
    /// Canonical tool names it looks at; empty: every tool.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Effects it looks at; empty: every effect.
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// The condition on the observation; `None`: every call it looks at halts.
    #[serde(default)]
    pub when: Option<Condition>,
    /// The halt's reason; `{tool}` and `{value}` (the pointer's value as JSON) are filled in.
    pub reason: String,
}

impl Rule {
    /// The reason, when this rule halts `step`.
    fn check(&self, step: &ExecutedStep<'_>) -> Option<String> {
        if !self.tools.is_empty() && !self.tools.iter().any(|t| t == &step.spec.name) {
            return None;
        }
        if !self.effects.is_empty() && !self.effects.contains(&step.spec.effect) {
            return None;
        }
        let value = match &self.when {
            None => None,
            Some(condition) => Some(condition.holds(step.observation)?),
        };
        let value = value.map(Value::to_string).unwrap_or_default();
        Some(
            self.reason
                .replace("{tool}", &step.spec.name)
                .replace("{value}", &value),
        )
    }
}

/// Why a rule file was refused (the message names the rule and what is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Not YAML of the rule file's shape.
    #[error("evaluator rules do not parse: {0}")]
    Parse(String),
    /// A rule breaks a rule of the format.
    #[error("evaluator rule `{rule}`: {problem}")]
    Invalid {
        /// The rule's name.
        rule: String,
        /// What is wrong.
        problem: String,
    },
}

/// The rule file: `rules:` in order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rules: Vec<Rule>,
}

/// The configurable evaluator: the first of its rules that holds halts the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleEvaluator {
    rules: Vec<Rule>,
}

impl RuleEvaluator {
    /// An evaluator over checked rules.
    ///
    /// # Errors
    /// [`RuleError::Invalid`] for an empty or repeated name, an empty reason, a pointer that is
    /// neither empty nor starts with `/`, or a condition with more than one of `equals`,
    /// `greater_than`, `count_greater_than`.
    pub fn new(rules: Vec<Rule>) -> Result<RuleEvaluator, RuleError> {
        let mut names: Vec<&str> = Vec::new();
        for rule in &rules {
            let invalid = |problem: &str| RuleError::Invalid {
                rule: rule.name.clone(),
                problem: problem.to_string(),
            };
            if rule.name.trim().is_empty() {
                return Err(invalid("the name is empty"));
            }
            if names.contains(&rule.name.as_str()) {
                return Err(invalid("the name is used twice"));
            }
            names.push(&rule.name);
            if rule.reason.trim().is_empty() {
                return Err(invalid(
                    "`reason` is empty: the owner is shown it on the card",
                ));
            }
            if let Some(c) = &rule.when {
                if !c.pointer.is_empty() && !c.pointer.starts_with('/') {
                    return Err(invalid(
                        "`when.pointer` must be a JSON pointer (empty, or starting with `/`)",
                    ));
                }
                let tests = [
                    c.equals.is_some(),
                    c.greater_than.is_some(),
                    c.count_greater_than.is_some(),
                ];
                if tests.iter().filter(|t| **t).count() > 1 {
                    return Err(invalid(
                        "`when` takes at most one of equals, greater_than, count_greater_than",
                    ));
                }
            }
        }
        Ok(RuleEvaluator { rules })
    }

    /// Parses and checks a rule file (YAML, see the module docs).
    ///
    /// # Errors
    /// [`RuleError::Parse`], or as [`RuleEvaluator::new`].
    pub fn from_yaml(text: &str) -> Result<RuleEvaluator, RuleError> {
        let file: RuleFile =
            serde_norway::from_str(text).map_err(|e| RuleError::Parse(e.to_string()))?;
        RuleEvaluator::new(file.rules)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

#[async_trait]
impl PostStepEvaluator for RuleEvaluator {
    async fn evaluate(&self, step: &ExecutedStep<'_>) -> Verdict {
        self.rules
            .iter()
            .find_map(|r| r.check(step))
            .map_or(Verdict::Continue, |reason| Verdict::Halt { reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        let m = Manifest::from_yaml(
            "plugin: p\ntools:\n  - name: search\n    effect: read\n  - name: restore\n    effect: write\n    confirm: never\n",
        )
        .unwrap();
        m.tools.into_iter().find(|t| t.name == name).unwrap()
    }

    async fn verdict(e: &RuleEvaluator, tool: &str, observation: Value) -> Verdict {
        let spec = spec(tool);
        let call = ToolCall {
            id: "c1".into(),
            name: tool.into(),
            arguments: json!({}),
        };
        e.evaluate(&ExecutedStep {
            call: &call,
            spec: &spec,
            args: &json!({}),
            observation: &observation,
            ctx: &CallContext::default(),
        })
        .await
    }

    #[tokio::test]
    async fn rules_match_by_tool_effect_and_condition() {
        let e = RuleEvaluator::from_yaml(
            r#"
rules:
  - name: many-restored
    tools: [restore]
    when: {pointer: /restored, greater_than: 2}
    reason: "{tool} restored {value} emails"
  - name: long-list
    effects: [read]
    when: {pointer: /results, count_greater_than: 1}
    reason: "a long list"
  - name: flagged
    when: {pointer: /flag, equals: "red"}
    reason: "red flag"
"#,
        )
        .unwrap();
        assert_eq!(
            verdict(&e, "restore", json!({"restored": 3})).await,
            Verdict::Halt {
                reason: "restore restored 3 emails".into()
            }
        );
        assert_eq!(
            verdict(&e, "restore", json!({"restored": 2})).await,
            Verdict::Continue
        );
        assert_eq!(
            verdict(&e, "restore", json!({"other": 9})).await,
            Verdict::Continue
        );
        assert_eq!(
            verdict(&e, "search", json!({"results": [1, 2]})).await,
            Verdict::Halt {
                reason: "a long list".into()
            }
        );
        assert_eq!(
            verdict(&e, "restore", json!({"results": [1, 2]})).await,
            Verdict::Continue,
            "the long-list rule looks at reads only"
        );
        assert_eq!(
            verdict(&e, "search", json!({"flag": "red"})).await,
            Verdict::Halt {
                reason: "red flag".into()
            }
        );
        assert_eq!(
            verdict(&e, "search", json!({"flag": "green"})).await,
            Verdict::Continue
        );
    }

    #[tokio::test]
    async fn a_rule_without_condition_halts_every_call_it_looks_at() {
        let e = RuleEvaluator::from_yaml(
            "rules:\n  - name: every-write\n    effects: [write]\n    reason: check {tool}\n",
        )
        .unwrap();
        assert_eq!(
            verdict(&e, "restore", json!({})).await,
            Verdict::Halt {
                reason: "check restore".into()
            }
        );
        assert_eq!(verdict(&e, "search", json!({})).await, Verdict::Continue);
    }

    #[test]
    fn bad_rules_are_refused_naming_the_rule() {
        for (yaml, needle) in [
            ("rules:\n  - name: a\n    reason: ''\n", "reason"),
            (
                "rules:\n  - name: a\n    reason: r\n  - name: a\n    reason: r\n",
                "twice",
            ),
            (
                "rules:\n  - name: a\n    reason: r\n    when: {pointer: count}\n",
                "pointer",
            ),
            (
                "rules:\n  - name: a\n    reason: r\n    when: {pointer: /n, equals: 1, greater_than: 2}\n",
                "at most one",
            ),
        ] {
            let e = RuleEvaluator::from_yaml(yaml).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
            assert!(e.to_string().contains("`a`"), "{e}");
        }
        assert!(matches!(
            RuleEvaluator::from_yaml("rules:\n  - name: a\n    reason: r\n    colour: red\n"),
            Err(RuleError::Parse(_))
        ));
    }
}
