//! `strata bench plot` and `--plot`: throughput over time, drawn as an SVG.
//!
//! Owns: reading the `secs_elapsed,interval_qps` CSV that `--report_file` writes (strata's and
//! RocksDB db_bench's alike), and drawing one line per CSV with a legend.
//! Must not: run benchmarks or write CSVs (report.rs does); it only reads files and draws.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use plotters::prelude::*;

/// One line of the chart: a legend name and its (seconds, ops/sec) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const USAGE: &str = "usage: strata bench plot A.csv [B.csv ...] [-o OUT.svg]\n\n\
    Draws throughput over time from --report_file CSVs (secs_elapsed,interval_qps; further\n\
    columns, as insertbench writes, are ignored), one line\n\
    per CSV, named after its file (strata's and db_bench's CSVs have the same format; give\n\
    db_bench --report_file=F.csv --report_interval_seconds=1). OUT defaults to the first CSV\n\
    with .svg instead of .csv.\n";

/// Runs `strata bench plot ARGS...`.
pub fn main(args: &[String]) -> Result<()> {
    let (inputs, output) = match parse_args(args)? {
        Some(parsed) => parsed,
        None => {
            print!("{USAGE}");
            return Ok(());
        }
    };
    let series = inputs.iter().map(|p| read_series(p)).collect::<Result<Vec<_>>>()?;
    draw(&series, "throughput over time", &output)?;
    eprintln!("strata bench plot: wrote {}", output.display());
    Ok(())
}

/// The CSVs and the SVG path; `None` asks for the usage text.
fn parse_args(args: &[String]) -> Result<Option<(Vec<PathBuf>, PathBuf)>> {
    let mut inputs = Vec::new();
    let mut output = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" | "-help" => return Ok(None),
            "-o" | "--output" => output = Some(PathBuf::from(it.next().context("-o needs a file name")?)),
            _ if a.starts_with("--output=") || a.starts_with("-o=") => {
                output = a.split_once('=').map(|(_, v)| PathBuf::from(v));
            }
            _ if a.starts_with('-') => bail!("unknown option {a:?}\n{USAGE}"),
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    let Some(first) = inputs.first() else { bail!("no CSV given\n{USAGE}") };
    let output = output.unwrap_or_else(|| first.with_extension("svg"));
    Ok(Some((inputs, output)))
}

/// Reads one `--report_file` CSV, named after its file stem.
pub fn read_series(path: &Path) -> Result<Series> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let points = parse_csv(&text).with_context(|| format!("parsing {}", path.display()))?;
    let name = path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into());
    Ok(Series { name, points })
}

/// Parses `secs_elapsed,interval_qps` rows; the header line and blank lines are skipped, and
/// columns past the second (the insert benchmark's phase, query rate, ...) are ignored.
pub fn parse_csv(text: &str) -> Result<Vec<(f64, f64)>> {
    let mut points = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("secs_elapsed") {
            continue;
        }
        let (secs, rest) = line.split_once(',').with_context(|| format!("line {}: no comma", i + 1))?;
        let qps = rest.split(',').next().unwrap_or(rest);
        let num = |s: &str| s.trim().parse::<f64>().with_context(|| format!("line {}: {s:?}", i + 1));
        points.push((num(secs)?, num(qps)?));
    }
    Ok(points)
}

/// Draws every series into one SVG chart with a legend.
pub fn draw(series: &[Series], title: &str, out: &Path) -> Result<()> {
    if series.iter().all(|s| s.points.is_empty()) {
        bail!("no rows to plot (a run shorter than --report_interval_seconds writes none)");
    }
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_max = all().map(|p| p.0).fold(1.0, f64::max);
    let y_max = all().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(out, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ops/sec")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_parse_and_header_is_skipped() {
        let pts = parse_csv("secs_elapsed,interval_qps\n1,1000\n2,1500\n\n").unwrap();
        assert_eq!(pts, [(1.0, 1000.0), (2.0, 1500.0)]);
        let wide = parse_csv("secs_elapsed,interval_ips,phase\n1.5,200,l.i0\n").unwrap();
        assert_eq!(wide, [(1.5, 200.0)]);
        assert!(parse_csv("secs_elapsed,interval_qps\n1;5\n").is_err());
    }

    #[test]
    fn two_csvs_make_an_svg_with_lines_and_a_legend() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("strata.csv");
        let b = dir.path().join("rocksdb.csv");
        std::fs::write(&a, "secs_elapsed,interval_qps\n1,1000\n2,1200\n3,900\n").unwrap();
        std::fs::write(&b, "secs_elapsed,interval_qps\n1,800\n2,850\n3,700\n").unwrap();
        let out = dir.path().join("t.svg");
        let args: Vec<String> =
            [a.to_str().unwrap(), b.to_str().unwrap(), "-o", out.to_str().unwrap()].map(String::from).into();
        main(&args).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.contains("<path") || svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("strata") && svg.contains("rocksdb"), "legend names the files");
    }

    #[test]
    fn output_defaults_to_the_first_csv_as_svg() {
        let (inputs, out) = parse_args(&["x/run.csv".to_string()]).unwrap().unwrap();
        assert_eq!((inputs.len(), out), (1, PathBuf::from("x/run.svg")));
        assert!(parse_args(&[]).is_err());
        assert!(parse_args(&["--help".to_string()]).unwrap().is_none());
    }
}
