//! The full-screen dashboard (`-i`): a UI thread draws the latest
//! [`Snapshot`] a few times a second with ratatui and handles the keys.
//! The engine's observer only replaces the snapshot under a mutex once per
//! interval; the cores never see the dashboard.
//!
//! Keys: `q` ends the run (drain, then the report after the screen is
//! left), `p` pauses and resumes sending, `s` shows the latest mismatch
//! sample, Ctrl-C is the first Ctrl-C (like `q`) and, a second time, exits
//! at once with code 130 after restoring the terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Cell, Padding, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::{Frame, Terminal};

use super::gauge::InputGauge;
use super::snapshot::{Snapshot, Tracker};
use super::terminal::{screen_active, ScreenGuard, Target};
use crate::engine::Settings;
use crate::engine::Stop;
use crate::report::escape_terminal;
use crate::stats::RunStats;

/// How often the screen is redrawn when no key arrives.
const FRAME: Duration = Duration::from_millis(250);

/// What the dashboard shows besides the numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UiState {
    /// Sending is paused.
    pub paused: bool,
    /// The run is stopping (`q`, Ctrl-C, a signal): draining.
    pub stopping: bool,
    /// Show the latest mismatch sample instead of the groups.
    pub show_sample: bool,
    /// The drain period, for the "stopping" notice.
    pub drain: Duration,
    /// Open model: the planned rate, requests per second per endpoint
    /// (`+` and `-` change it; `None` in the closed model).
    pub rate: Option<f64>,
    /// Open model: the factor the rate was changed by (1: as planned).
    pub rate_scale: f64,
    /// Use colours (not with `NO_COLOR`).
    pub color: bool,
}

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    /// Nothing (an unbound key).
    Nothing,
    /// End the run: stop sending, drain, report.
    Stop,
    /// Pause or resume sending.
    TogglePause,
    /// Show or hide the latest mismatch sample.
    ToggleSample,
    /// Exit at once with code 130 (the second Ctrl-C).
    Exit,
    /// Open model: multiply the rate by this factor.
    ScaleRate(f64),
}

/// Map a key to a command. In the open model ([`UiState::rate`]), `+`
/// and `-` change the rate by a quarter.
pub fn on_key(key: KeyEvent, ui: &UiState) -> Command {
    if key.kind != KeyEventKind::Press {
        return Command::Nothing;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') if ctrl => {
            if ui.stopping {
                Command::Exit
            } else {
                Command::Stop
            }
        }
        KeyCode::Char('q') | KeyCode::Char('Q') | KeyCode::Esc => Command::Stop,
        KeyCode::Char('p') | KeyCode::Char('P') | KeyCode::Char(' ') => Command::TogglePause,
        KeyCode::Char('s') | KeyCode::Char('S') => Command::ToggleSample,
        KeyCode::Char('+') | KeyCode::Char('=') if ui.rate.is_some() => Command::ScaleRate(1.25),
        KeyCode::Char('-') | KeyCode::Char('_') if ui.rate.is_some() => Command::ScaleRate(0.8),
        _ => Command::Nothing,
    }
}

/// Shared between the observer (writes once per interval) and the UI
/// thread (reads a few times a second, keeps the pause clock).
#[derive(Default)]
struct Shared {
    snapshot: Snapshot,
    paused_total: Duration,
    paused_since: Option<Instant>,
}

impl Shared {
    fn paused(&self) -> Duration {
        self.paused_total + self.paused_since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// A running dashboard: the observer side and the UI thread.
pub struct Dashboard {
    tracker: Tracker,
    gauge: Option<InputGauge>,
    shared: Arc<Mutex<Shared>>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Take over the terminal (stderr's, else /dev/tty) and start drawing.
    ///
    /// # Errors
    /// When there is no terminal or it cannot be set up.
    pub fn start(
        settings: &Settings,
        gauge: Option<InputGauge>,
        stop: &Stop,
    ) -> std::io::Result<Dashboard> {
        let labels: Vec<String> = settings.endpoints.iter().map(|e| e.label.clone()).collect();
        let tracker = Tracker::new(&labels, settings.interval, settings.stop_after);
        let shared = Arc::new(Mutex::new(Shared {
            snapshot: tracker.snapshot().clone(),
            ..Shared::default()
        }));
        let done = Arc::new(AtomicBool::new(false));
        let ui = UiState {
            drain: settings.drain,
            rate: settings.rate().map(|r| r.0),
            rate_scale: 1.0,
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            ..UiState::default()
        };
        let mut target = Target::open()?;
        let guard = ScreenGuard::enter(&mut target)?;
        let terminal = Terminal::new(CrosstermBackend::new(target))?;
        let thread = {
            let (shared, done, stop) = (shared.clone(), done.clone(), stop.clone());
            std::thread::Builder::new()
                .name("versus-dashboard".into())
                .spawn(move || ui_loop(terminal, guard, &shared, &done, &stop, ui))?
        };
        Ok(Dashboard {
            tracker,
            gauge,
            shared,
            done,
            thread: Some(thread),
        })
    }

    /// Take in an interval: a new snapshot for the UI thread.
    pub fn interval(&mut self, index: u64, delta: &RunStats, total: &RunStats) {
        let paused = lock(&self.shared).paused();
        let input = self.gauge.as_mut().and_then(InputGauge::fraction);
        self.tracker.observe(index, delta, total, paused, input);
        let snapshot = self.tracker.snapshot().clone();
        lock(&self.shared).snapshot = snapshot;
    }

    /// The run is over: stop drawing and give the terminal back.
    pub fn finish(mut self) {
        self.close();
    }

    fn close(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        super::terminal::restore_terminal();
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type Screen = Terminal<CrosstermBackend<Target>>;

fn ui_loop(
    mut terminal: Screen,
    guard: ScreenGuard,
    shared: &Mutex<Shared>,
    done: &AtomicBool,
    stop: &Stop,
    mut ui: UiState,
) {
    while !done.load(Ordering::SeqCst) && screen_active() {
        ui.paused = stop.is_paused();
        ui.stopping = stop.is_stopped();
        let snapshot = lock(shared).snapshot.clone();
        if terminal.draw(|f| render(f, &snapshot, &ui)).is_err() {
            break;
        }
        let next = Instant::now() + FRAME;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            if wait.is_zero() || !event::poll(wait).unwrap_or(false) {
                break;
            }
            match event::read() {
                Ok(Event::Key(key)) => {
                    if apply(on_key(key, &ui), &mut ui, shared, stop) {
                        break;
                    }
                }
                Ok(Event::Resize(..)) => break,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
    drop(guard);
}

/// Carry out a command; true when the screen should be redrawn at once.
fn apply(command: Command, ui: &mut UiState, shared: &Mutex<Shared>, stop: &Stop) -> bool {
    match command {
        Command::Nothing => false,
        Command::Stop => {
            stop.stop();
            ui.stopping = true;
            true
        }
        Command::TogglePause => {
            let now = Instant::now();
            let mut s = lock(shared);
            if stop.is_paused() {
                if let Some(since) = s.paused_since.take() {
                    s.paused_total += now - since;
                }
                stop.set_paused(false);
            } else {
                s.paused_since = Some(now);
                stop.set_paused(true);
            }
            true
        }
        Command::ToggleSample => {
            ui.show_sample = !ui.show_sample;
            true
        }
        Command::ScaleRate(factor) => {
            ui.rate_scale = stop.scale_rate(factor);
            true
        }
        Command::Exit => {
            super::terminal::restore_terminal();
            eprintln!("versus: interrupted");
            std::process::exit(130);
        }
    }
}

/// Draw the dashboard for `s` on `f`.
pub fn render(f: &mut Frame, s: &Snapshot, ui: &UiState) {
    let n = u16::try_from(s.endpoints.len()).unwrap_or(u16::MAX);
    let flows = flows_height(s);
    let [title, table, flow_area, sparks, bottom, help] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(n.saturating_add(3)),
        Constraint::Length(flows),
        Constraint::Length(n.saturating_mul(2).saturating_add(2)),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let paint = |c: Color| {
        if ui.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    };
    f.render_widget(title_line(s, ui, &paint, title.width), title);
    f.render_widget(endpoint_table(s, &paint, table.width), table);
    if flows > 0 {
        f.render_widget(flows_table(s, &paint), flow_area);
    }
    render_sparklines(f, sparks, s, &paint);
    if ui.show_sample {
        f.render_widget(sample(s), bottom);
    } else {
        render_groups(f, bottom, s);
    }
    f.render_widget(key_line(ui, help.width), help);
}

/// The keys and what they do, in short words when the long ones do not
/// fit in `width` (80 columns with the rate keys).
fn key_line(ui: &UiState, width: u16) -> Line<'static> {
    let line = |long: bool| {
        let pick = |l: &'static str, s: &'static str| if long { l } else { s };
        let mut keys = vec![
            ("q", pick("quit and report", "quit")),
            ("p", pick("pause/resume", "pause")),
        ];
        if ui.rate.is_some() {
            keys.push(("+/-", "rate"));
        }
        keys.push((
            "s",
            match (ui.show_sample, long) {
                (true, true) => "mismatch groups",
                (true, false) => "groups",
                (false, true) => "latest mismatch",
                (false, false) => "sample",
            },
        ));
        keys.push(("Ctrl-C twice", "exit now"));
        let mut spans = Vec::new();
        for (k, what) in keys {
            spans.push(Span::styled(format!(" {k} "), Style::new().reversed()));
            spans.push(Span::raw(format!(" {what}  ")));
        }
        Line::from(spans)
    };
    let long = line(true);
    // The last two spaces are padding.
    if long.width() <= usize::from(width) + 2 {
        long
    } else {
        line(false)
    }
}

/// The title: the clock, the state, the target rate, the mismatches and
/// the time left, in short words when the long ones do not fit in
/// `width` (80 columns with a target rate).
fn title_line(
    s: &Snapshot,
    ui: &UiState,
    paint: &dyn Fn(Color) -> Style,
    width: u16,
) -> Line<'static> {
    let line = |long: bool| {
        let mut spans = vec![
            Span::styled(" versus ", Style::new().bold().reversed()),
            Span::raw(format!(" {} ", super::clock(s.elapsed))),
        ];
        if ui.stopping {
            spans.push(Span::styled(
                format!(
                    " STOPPING: waiting up to {} for requests in flight ",
                    crate::report::duration(ui.drain)
                ),
                paint(Color::Yellow).bold(),
            ));
        } else if ui.paused {
            spans.push(Span::styled(
                " PAUSED ",
                paint(Color::Yellow).bold().reversed(),
            ));
        } else {
            spans.push(Span::styled(" running ", paint(Color::Green)));
        }
        if let Some(rate) = ui.rate {
            let changed = if (ui.rate_scale - 1.0).abs() > 1e-9 {
                format!(" (x{:.2})", ui.rate_scale)
            } else {
                String::new()
            };
            let rate = super::rate(rate * ui.rate_scale);
            spans.push(Span::raw(if long {
                format!(" │ target {rate}/s per endpoint{changed}")
            } else {
                format!(" │ {rate}/s{changed}")
            }));
        }
        if s.endpoints.len() > 1 {
            let (compared, mismatched) = (super::count(s.compared), super::count(s.mismatched));
            spans.push(Span::raw(if long {
                format!(
                    " │ compared {compared}, mismatched {mismatched} ({})",
                    crate::report::percent(s.mismatched, s.compared)
                )
            } else {
                format!(" │ mismatched {mismatched} of {compared}")
            }));
        }
        if let Some(left) = s.left.filter(|_| !ui.stopping) {
            spans.push(Span::raw(format!(" │ {} left", super::clock(left))));
        }
        Line::from(spans)
    };
    let long = line(true);
    if long.width() <= usize::from(width) {
        long
    } else {
        line(false)
    }
}

fn right(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).right_aligned())
}

/// The endpoint table's columns after the name: header, width, and when
/// a narrow screen leaves it out (1 first, then 2, ...; 0 never).
const COLUMNS: [(&str, u16, u8); 9] = [
    ("done", 10, 0),
    ("now/s", 7, 0),
    ("avg/s", 7, 2),
    ("p50", 7, 3),
    ("p95", 7, 1),
    ("p99", 7, 0),
    ("max", 7, 4),
    ("errors", 7, 0),
    ("mismatch", 8, 0),
];

/// Which of [`COLUMNS`] fit in `width` beside names `name` characters
/// wide: the optional ones are left out in their order until they do (at
/// 80 columns avg/s and p95), so that rows can always be told apart.
fn shown_columns(width: u16, name: u16) -> Vec<usize> {
    let mut shown: Vec<usize> = (0..COLUMNS.len()).collect();
    let need = |shown: &[usize]| name + shown.iter().map(|&c| COLUMNS[c].1 + 1).sum::<u16>();
    for leave_out in 1..=4 {
        if need(&shown) <= width {
            break;
        }
        shown.retain(|&c| COLUMNS[c].2 != leave_out);
    }
    shown
}

fn endpoint_table(s: &Snapshot, paint: &dyn Fn(Color) -> Style, width: u16) -> Table<'static> {
    // Inside the borders and padding; names up to 16 characters get room.
    let longest = s.endpoints.iter().map(|e| e.label.chars().count()).max();
    let name = u16::try_from(longest.unwrap_or(0).clamp(8, 16)).unwrap_or(16);
    let shown = shown_columns(width.saturating_sub(4), name);
    let pick = |cells: Vec<Cell<'static>>| {
        cells
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shown.contains(i))
            .map(|(_, c)| c)
            .collect::<Vec<_>>()
    };
    let header = Row::new(std::iter::once(Cell::from("endpoint")).chain(pick(
        COLUMNS.iter().map(|c| right(c.0.to_string())).collect(),
    )))
    .style(Style::new().bold());
    let rows = s.endpoints.iter().enumerate().map(|(i, e)| {
        let errors = right(super::count(e.errors)).style(if e.errors > 0 {
            paint(Color::Red)
        } else {
            Style::new()
        });
        let diffs = if i == 0 {
            right("(ref)".into())
        } else {
            right(super::count(e.diffs)).style(if e.diffs > 0 {
                paint(Color::Red)
            } else {
                Style::new()
            })
        };
        let cells = vec![
            right(super::count(e.done)),
            right(super::rate(e.now_rps)),
            right(super::rate(e.avg_rps)),
            right(super::micros(e.p50)),
            right(super::micros(e.p95)),
            right(super::micros(e.p99)),
            right(super::micros(e.max)),
            errors,
            diffs,
        ];
        Row::new(std::iter::once(Cell::from(escape_terminal(&e.label))).chain(pick(cells)))
    });
    let widths = std::iter::once(Constraint::Fill(1))
        .chain(shown.iter().map(|&c| Constraint::Length(COLUMNS[c].1)));
    Table::new(rows, widths).header(header).block(
        Block::bordered()
            .title(" endpoints ")
            .padding(Padding::horizontal(1)),
    )
}

/// Most flow steps the dashboard lists; the rest are counted in one line.
const STEPS_SHOWN: usize = 6;

/// The height of the flows table: borders, a header, the successful
/// instances and a row per step shown (none for a request stream).
fn flows_height(s: &Snapshot) -> u16 {
    let steps = s.endpoints.iter().map(|e| e.steps.len()).max().unwrap_or(0);
    match steps {
        0 => 0,
        n => u16::try_from(n.min(STEPS_SHOWN) + 4).unwrap_or(u16::MAX),
    }
}

/// Flows: a column per endpoint with its successful instances so far, then
/// a row per step: requests, errors, p99 at each endpoint.
fn flows_table(s: &Snapshot, paint: &dyn Fn(Color) -> Style) -> Table<'static> {
    let steps = s
        .endpoints
        .iter()
        .max_by_key(|e| e.steps.len())
        .map_or(&[][..], |e| &e.steps[..]);
    let header = Row::new(
        std::iter::once(Cell::from("step")).chain(
            s.endpoints
                .iter()
                .map(|e| right(format!("{} ", escape_terminal(&e.label)))),
        ),
    )
    .style(Style::new().bold());
    let mut rows = vec![Row::new(std::iter::once(Cell::from("successful")).chain(
        s.endpoints.iter().map(|e| {
            right(format!(
                "{} of {} ",
                super::count(e.succeeded),
                super::count(e.instances)
            ))
        }),
    ))];
    for (k, step) in steps.iter().enumerate().take(STEPS_SHOWN) {
        if k + 1 == STEPS_SHOWN && steps.len() > STEPS_SHOWN {
            rows.push(Row::new([Cell::from(format!(
                "… {} more",
                steps.len() - k
            ))]));
            break;
        }
        let cells = s.endpoints.iter().map(|e| match e.steps.get(k) {
            Some(p) => Cell::from(
                Line::from(vec![
                    Span::raw(format!("{:>7} ", super::count(p.requests))),
                    Span::styled(
                        format!("{:>5}", super::count(p.errors)),
                        if p.errors > 0 {
                            paint(Color::Red)
                        } else {
                            Style::new()
                        },
                    ),
                    Span::raw(format!(" {:>7} ", super::micros(p.p99))),
                ])
                .right_aligned(),
            ),
            None => right("- ".into()),
        });
        rows.push(Row::new(
            std::iter::once(Cell::from(escape_terminal(&step.name))).chain(cells),
        ));
    }
    let names = steps
        .iter()
        .map(|p| escape_terminal(&p.name).chars().count())
        .fold("successful".len(), usize::max)
        .min(24);
    let widths = std::iter::once(Constraint::Length(u16::try_from(names).unwrap_or(24)))
        .chain(s.endpoints.iter().map(|_| Constraint::Fill(1)));
    Table::new(rows, widths).header(header).block(
        Block::bordered()
            .title(" flows: successful instances; per step requests, errors, p99 ")
            .padding(Padding::horizontal(1)),
    )
}

fn render_sparklines(f: &mut Frame, area: Rect, s: &Snapshot, paint: &dyn Fn(Color) -> Style) {
    let block = Block::bordered()
        .title(" requests/s and p99 latency per interval ")
        .padding(Padding::horizontal(1));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let label_width = s
        .endpoints
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(0)
        .min(24) as u16
        + 17;
    let rows = Layout::vertical(vec![Constraint::Length(1); s.endpoints.len() * 2]).split(inner);
    for (i, e) in s.endpoints.iter().enumerate() {
        let label = escape_terminal(&e.label);
        let lines = [
            (
                format!("{label} req/s {:>7}", super::rate(e.now_rps)),
                &e.rps_history,
                Color::Cyan,
            ),
            (
                format!(
                    "{label} p99 {:>9}",
                    super::micros(e.p99_history.back().copied().unwrap_or(0))
                ),
                &e.p99_history,
                Color::Magenta,
            ),
        ];
        for (j, (text, history, color)) in lines.into_iter().enumerate() {
            let Some(&row) = rows.get(i * 2 + j) else {
                return;
            };
            let [name, spark] =
                Layout::horizontal([Constraint::Length(label_width), Constraint::Fill(1)])
                    .areas(row);
            f.render_widget(Line::from(text), name);
            let shown = usize::from(spark.width);
            let data: Vec<u64> = history
                .iter()
                .skip(history.len().saturating_sub(shown))
                .copied()
                .collect();
            f.render_widget(Sparkline::default().data(&data).style(paint(color)), spark);
        }
    }
}

fn render_groups(f: &mut Frame, area: Rect, s: &Snapshot) {
    let block = Block::bordered()
        .title(" mismatches by method and field (most frequent first) ")
        .padding(Padding::horizontal(1));
    if s.groups.is_empty() {
        let text = if s.endpoints.len() < 2 {
            "one endpoint: nothing to compare"
        } else if s.mismatched > 0 {
            "mismatches are counted; no groups recorded"
        } else {
            "no mismatches so far"
        };
        f.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let header = Row::new([
        right("count".into()),
        Cell::from("endpoint"),
        Cell::from("method"),
        Cell::from("field"),
        Cell::from("kind"),
    ])
    .style(Style::new().bold());
    let rows = s.groups.iter().map(|g| {
        Row::new(vec![
            right(super::count(g.count)),
            Cell::from(escape_terminal(&g.endpoint)),
            Cell::from(escape_terminal(&g.method)),
            Cell::from(escape_terminal(&g.field)),
            Cell::from(escape_terminal(&g.kind)),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Fill(1),
            Constraint::Fill(2),
            Constraint::Length(10),
        ],
    )
    .header(header)
    .block(block);
    f.render_widget(table, area);
}

fn sample(s: &Snapshot) -> Paragraph<'static> {
    let block = Block::bordered()
        .title(" latest mismatch sample ")
        .padding(Padding::horizontal(1));
    let Some(l) = &s.latest else {
        return Paragraph::new("no mismatch sample yet").block(block);
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("request #{}", l.sample.seq), Style::new().bold()),
            Span::raw(format!(
                "  {} {} ({}, {})",
                escape_terminal(&l.method),
                escape_terminal(&l.field),
                escape_terminal(&l.kind),
                escape_terminal(&l.endpoint)
            )),
        ]),
        Line::from(format!("request: {}", escape_terminal(&l.sample.request))),
    ];
    for (i, v) in l.sample.values.iter().enumerate() {
        let label = s
            .endpoints
            .get(i)
            .map_or_else(|| format!("#{i}"), |e| escape_terminal(&e.label));
        lines.push(Line::from(format!("{label}: {}", escape_terminal(v))));
    }
    Paragraph::new(Text::from(lines))
        .wrap(Wrap { trim: false })
        .block(block)
}

#[cfg(test)]
mod tests {
    use super::super::snapshot::{EndpointRow, LatestSample, StepRow};
    use super::*;
    use crate::stats::{MismatchGroup, MismatchSample};
    use ratatui::backend::TestBackend;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys() {
        let running = UiState::default();
        let stopping = UiState {
            stopping: true,
            ..UiState::default()
        };
        let none = KeyModifiers::NONE;
        assert_eq!(
            on_key(key(KeyCode::Char('q'), none), &running),
            Command::Stop
        );
        assert_eq!(
            on_key(key(KeyCode::Char('p'), none), &running),
            Command::TogglePause
        );
        assert_eq!(
            on_key(key(KeyCode::Char('s'), none), &running),
            Command::ToggleSample
        );
        assert_eq!(
            on_key(key(KeyCode::Char('x'), none), &running),
            Command::Nothing
        );
        let ctrl_c = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(on_key(ctrl_c, &running), Command::Stop);
        assert_eq!(on_key(ctrl_c, &stopping), Command::Exit);
        // `q` again while stopping only stops (again).
        assert_eq!(
            on_key(key(KeyCode::Char('q'), none), &stopping),
            Command::Stop
        );
        let mut release = key(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        let plus = KeyEvent::new(KeyCode::Char('+'), KeyModifiers::NONE);
        assert_eq!(
            on_key(plus, &running),
            Command::Nothing,
            "no rate keys in the closed model"
        );
        let open = UiState {
            rate: Some(500.0),
            ..UiState::default()
        };
        assert_eq!(on_key(plus, &open), Command::ScaleRate(1.25));
        let minus = KeyEvent::new(KeyCode::Char('-'), KeyModifiers::NONE);
        assert_eq!(on_key(minus, &open), Command::ScaleRate(0.8));
        assert_eq!(on_key(release, &running), Command::Nothing);
    }

    fn snapshot() -> Snapshot {
        let row = |label: &str, base: u64| EndpointRow {
            label: label.into(),
            done: 12_345 + base,
            errors: base / 100,
            now_rps: 1_000.0 + base as f64,
            avg_rps: 990.0 + base as f64,
            p50: 180 + base,
            p95: 530 + base,
            p99: 770 + base,
            max: 4_300 + base,
            diffs: base / 10,
            rps_history: (0..20).map(|i| 800 + (i % 5) * 50 + base).collect(),
            p99_history: (0..20).map(|i| 700 + (i % 4) * 30 + base).collect(),
            ..EndpointRow::default()
        };
        Snapshot {
            elapsed: Duration::from_millis(12_250),
            paused: Duration::ZERO,
            endpoints: vec![row("reference", 0), row("candidate", 300)],
            compared: 12_000,
            mismatched: 30,
            groups: vec![
                MismatchGroup {
                    method: "eth_getBalance".into(),
                    field: "$.result".into(),
                    kind: "changed".into(),
                    endpoint: "candidate".into(),
                    count: 25,
                    samples: Vec::new(),
                },
                MismatchGroup {
                    method: "eth_call".into(),
                    field: "status".into(),
                    kind: "changed".into(),
                    endpoint: "candidate".into(),
                    count: 5,
                    samples: Vec::new(),
                },
            ],
            latest: Some(LatestSample {
                method: "eth_call".into(),
                field: "status".into(),
                kind: "changed".into(),
                endpoint: "candidate".into(),
                sample: MismatchSample {
                    seq: 1234,
                    request: r#"{"method":"eth_call"}"#.into(),
                    values: vec!["200".into(), "503".into()],
                    diff: String::new(),
                },
            }),
            left: Some(Duration::from_secs(48)),
            intervals: 49,
        }
    }

    fn draw(s: &Snapshot, ui: &UiState, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| render(f, s, ui)).unwrap();
        let buffer = terminal.backend().buffer();
        let mut out = String::new();
        for y in 0..buffer.area.height {
            let mut line = String::new();
            for x in 0..buffer.area.width {
                line.push_str(buffer[(x, y)].symbol());
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// `s` drawn `width` × `height` while running is `want`.
    fn assert_screen(s: &Snapshot, width: u16, height: u16, want: &str) {
        let ui = UiState {
            drain: Duration::from_secs(1),
            ..UiState::default()
        };
        let got = draw(s, &ui, width, height);
        assert_eq!(got, want, "got:\n{got}");
    }

    #[test]
    fn renders_a_known_snapshot() {
        assert_screen(&snapshot(), 100, 22, include_str!("dashboard_snapshot.txt"));
    }

    /// The snapshot as a flow: three steps, the candidate's second failing
    /// now and then.
    fn flow_snapshot() -> Snapshot {
        let mut s = snapshot();
        for (e, failed) in s.endpoints.iter_mut().zip([0, 12]) {
            e.instances = 4_115;
            e.succeeded = 4_115 - failed;
            e.steps = [("login", 0, 640), ("add", failed, 1_250), ("pay", 0, 880)]
                .into_iter()
                .map(|(name, errors, p99)| StepRow {
                    name: name.into(),
                    requests: if name == "pay" { 4_115 - failed } else { 4_115 },
                    errors,
                    p99,
                })
                .collect();
        }
        s
    }

    #[test]
    fn a_flow_shows_successful_instances_and_a_row_per_step_in_80_columns() {
        assert_screen(
            &flow_snapshot(),
            80,
            24,
            include_str!("dashboard_flow_snapshot.txt"),
        );
        // A long flow lists its first steps and counts the rest.
        let mut long = flow_snapshot();
        for e in &mut long.endpoints {
            e.steps = (1..=9)
                .map(|i| StepRow {
                    name: format!("step {i}"),
                    ..e.steps[0].clone()
                })
                .collect();
        }
        let got = draw(&long, &UiState::default(), 80, 30);
        assert!(got.contains("│ step 5 "), "{got}");
        assert!(!got.contains("│ step 6 "), "{got}");
        assert!(got.contains("│ … 4 more "), "{got}");
    }

    #[test]
    fn shows_pause_stop_the_sample_and_the_rate_keys() {
        let mut ui = UiState {
            paused: true,
            drain: Duration::from_secs(1),
            ..UiState::default()
        };
        let s = snapshot();
        assert!(draw(&s, &ui, 100, 22).contains(" PAUSED "));
        ui.stopping = true;
        let stopping = draw(&s, &ui, 100, 22);
        assert!(stopping.contains("STOPPING: waiting up to 1s for requests in flight"));
        assert!(!stopping.contains("left"));
        assert!(!stopping.contains("+/-"));
        ui.show_sample = true;
        ui.rate = Some(500.0);
        ui.rate_scale = 1.25;
        let sample = draw(&s, &ui, 100, 22);
        assert!(sample.contains("request #1234  eth_call status (changed, candidate)"));
        assert!(sample.contains(r#"request: {"method":"eth_call"}"#));
        assert!(sample.contains("reference: 200"));
        assert!(sample.contains("candidate: 503"));
        assert!(sample.contains(" +/-  rate"));
        let wide = draw(&s, &ui, 160, 22);
        assert!(
            wide.contains("│ target 625/s per endpoint (x1.25)"),
            "{wide}"
        );
    }

    /// At 80 columns the endpoint names and every header shown are whole
    /// (the names once got no room at all and `mismatch` read `ismatch`);
    /// columns are left out instead, and a wide screen shows them all.
    #[test]
    fn at_80_columns_endpoint_names_and_headers_are_whole() {
        let mut s = snapshot();
        s.endpoints[0].label = "reference-node-1".into();
        s.endpoints[1].label = "candidate-node-2".into();
        let ui = UiState {
            rate: Some(500.0),
            rate_scale: 1.25,
            ..UiState::default()
        };
        let narrow = draw(&s, &ui, 80, 24);
        let row = |screen: &str, start: &str| -> Vec<String> {
            let line = screen
                .lines()
                .find(|l| l.starts_with(&format!("│ {start}")))
                .unwrap_or_else(|| panic!("no {start:?} row:\n{screen}"));
            line.trim_matches(|c| c == '│' || c == ' ')
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let headers = row(&narrow, "endpoint");
        assert_eq!(
            headers,
            ["endpoint", "done", "now/s", "p50", "p99", "max", "errors", "mismatch"],
            "{narrow}"
        );
        assert!(
            narrow.contains("mismatched 30 of 12,000 │ 48.0s left"),
            "{narrow}"
        );
        assert_eq!(row(&narrow, "reference-node-1")[0], "reference-node-1");
        let candidate = row(&narrow, "candidate-node-2");
        assert_eq!(candidate.len(), headers.len(), "{narrow}");
        assert!(narrow.contains(" exit now"), "{narrow}");
        let wide = draw(&s, &ui, 120, 24);
        assert_eq!(
            row(&wide, "endpoint"),
            [
                "endpoint", "done", "now/s", "avg/s", "p50", "p95", "p99", "max", "errors",
                "mismatch"
            ],
            "{wide}"
        );
        assert!(wide.contains(" quit and report "), "{wide}");
    }

    #[test]
    fn a_tiny_or_empty_screen_does_not_panic() {
        let ui = UiState::default();
        draw(&snapshot(), &ui, 10, 3);
        draw(&Snapshot::default(), &ui, 80, 24);
        let mut one = snapshot();
        one.endpoints.truncate(1);
        one.groups.clear();
        assert!(draw(&one, &ui, 80, 24).contains("one endpoint: nothing to compare"));
    }
}
