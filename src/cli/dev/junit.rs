//! `corral test --junit FILE`: the outcomes as JUnit XML, the report CI systems read. A plugin
//! is a suite, a fixture a test case (class `plugin.tool`); a wrong result is a `failure`, a
//! call with no result (a JSON-RPC error, a timeout) or a build that failed is an `error`.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::client::{Outcome, Verdict};

/// How one plugin fared: its fixtures' outcomes, or why none ran.
pub enum PluginRun {
    Ran(Vec<Outcome>),
    /// The build failed, or the host refused the component.
    Broken(String),
}

/// The report of `plugins` (name and run) as JUnit XML.
pub fn report(plugins: &[(String, PluginRun)]) -> anyhow::Result<String> {
    let mut report = Report::new("corral test");
    for (plugin, run) in plugins {
        let mut suite = TestSuite::new(plugin.as_str());
        match run {
            PluginRun::Broken(why) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(why.lines().next().unwrap_or_default()).set_description(why.as_str());
                let mut case = TestCase::new("build", status);
                case.set_classname(plugin.as_str());
                suite.add_test_case(case);
            }
            PluginRun::Ran(outcomes) => {
                for o in outcomes {
                    let status = match &o.verdict {
                        Verdict::Pass => TestCaseStatus::success(),
                        Verdict::Fail(why) => non_success(NonSuccessKind::Failure, why),
                        Verdict::Error(why) => non_success(NonSuccessKind::Error, why),
                    };
                    let mut case = TestCase::new(o.fixture.as_str(), status);
                    case.set_classname(format!("{plugin}.{}", o.tool)).set_time(o.took);
                    suite.add_test_case(case);
                }
            }
        }
        report.add_test_suite(suite);
    }
    report.to_string().map_err(|e| anyhow::anyhow!("cannot write the JUnit report: {e}"))
}

fn non_success(kind: NonSuccessKind, why: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_message(why);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn failures_errors_and_broken_builds_are_counted_apart() {
        let outcome = |name: &str, verdict| Outcome { fixture: name.into(), tool: "greet".into(), took: Duration::from_millis(1500), verdict };
        let runs = vec![
            (
                "hello".to_owned(),
                PluginRun::Ran(vec![
                    outcome("a", Verdict::Pass),
                    outcome("b", Verdict::Fail("expected x".into())),
                    outcome("c", Verdict::Error("timeout".into())),
                ]),
            ),
            ("broken".to_owned(), PluginRun::Broken("build failed\nerror[E0308]".into())),
        ];
        let xml = report(&runs).unwrap();
        let root = xml.lines().find(|l| l.contains("<testsuites")).unwrap();
        for count in [r#"tests="4""#, r#"failures="1""#, r#"errors="2""#] {
            assert!(root.contains(count), "{count} in {xml}");
        }
        assert!(xml.contains(r#"classname="hello.greet""#), "{xml}");
        assert!(xml.contains(r#"<failure message="expected x""#), "{xml}");
        assert!(xml.contains(r#"<testsuite name="broken" tests="1" disabled="0" errors="1" failures="0">"#) || xml.contains(r#"name="broken""#), "{xml}");
    }
}
