//! `lore test`: replay the regression tests generated from a skill's corrections.
//!
//! Exits non-zero when any test fails, so it can gate CI. A passing test marks its lesson
//! `validated_by_test` (audited); a failing one leaves the lesson as it was.

use anyhow::{Result, bail};
use lore_engine::TestReport;
use lore_sqlite::OpenMode;

use crate::cli::TestArgs;
use crate::config::Paths;
use crate::config::required_model;
use crate::output;

pub fn run(paths: &Paths, args: TestArgs, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    let tests = engine.regression_tests(&args.skill)?;
    if tests.is_empty() {
        bail!(
            "{} has no regression tests yet; `lore correct` writes one per correction",
            args.skill
        );
    }
    let llm = required_model()?;
    let report = engine.run_regression_tests(&args.skill, llm.as_ref())?;
    if json {
        output::json(&report)?;
    } else {
        print_report(&report)?;
    }
    let failed = report.cases.len() - report.passed();
    if failed > 0 {
        bail!("{failed} of {} tests failed", report.cases.len());
    }
    Ok(())
}

fn print_report(report: &TestReport) -> Result<()> {
    for case in &report.cases {
        if case.passed {
            let note = if case.validated {
                " — lesson marked validated"
            } else {
                ""
            };
            output::line(format!(
                "PASS {} (lesson {}){note}",
                case.id, case.lesson_id
            ))?;
        } else {
            output::line(format!("FAIL {} (lesson {})", case.id, case.lesson_id))?;
            for why in &case.failures {
                output::line(format!("     {why}"))?;
            }
        }
    }
    output::line(format!(
        "{}: {} passed, {} failed",
        report.skill,
        report.passed(),
        report.cases.len() - report.passed()
    ))
}
