package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
)

// chromium finds a Chromium, or skips the test saying how to install one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: apt-get install chromium")
	return ""
}

// browserEvents records what the page did that a self-contained report
// must not: console errors, uncaught exceptions and any request beyond the
// page itself.
type browserEvents struct {
	mu       sync.Mutex
	page     string
	errors   []string
	requests []string
}

func (b *browserEvents) on(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if e.Request.URL != b.page {
			b.requests = append(b.requests, e.Request.URL)
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			b.errors = append(b.errors, fmt.Sprintf("console.%s", e.Type))
		}
	case *runtime.EventExceptionThrown:
		b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			b.errors = append(b.errors, fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// The HTML report of a recorded run, and a comparison of two, opened in
// headless Chromium as a person would open the CI artifact: each loads with
// no console error and no request, draws every chart, carries chart data
// that parses, and its screenshot is not blank.
func TestHTMLReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; run without -short")
	}
	ins := openRecorded(t)
	dir := t.TempDir()
	o := report.Options{Prices: examplePrices(t)}
	single, err := report.WriteFiles(filepath.Join(dir, "single"), ins, []report.Format{report.FormatHTML}, o)
	require.NoError(t, err)
	compare, err := report.WriteFiles(filepath.Join(dir, "compare"), append(ins, candidate(t, ins[0])), []report.Format{report.FormatHTML}, o)
	require.NoError(t, err)

	actx, cancel := newChromium(t, dir)
	defer cancel()

	ids := openInChromium(actx, t, single[0])
	var want []string
	for _, sweep := range []string{"BenchmarkOneHop-one-hop", "BenchmarkTwoHop-two-hop"} {
		for _, c := range []string{"latency", "throughput", "loss", "rate", "spectrum", "cpu", "cpu1k", "rss"} {
			want = append(want, c+"-"+sweep)
		}
	}
	assert.Equal(t, append(want, "extrahop-BenchmarkTwoHop---BenchmarkOneHop"), ids)
	ids = openInChromium(actx, t, compare[0])
	assert.Len(t, ids, 2*17+6, "each run's charts and 3 per concurrency sweep to compare")
}

// newChromium starts a headless Chromium with a 1280×1024 window, the
// profile under dir.
func newChromium(t *testing.T, dir string) (context.Context, context.CancelFunc) {
	t.Helper()
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1280, 1024))
	return actx, func() { acancel(); cancel() }
}

// mixedInPage lists, from the chart data of the page (each chart's JSON
// block and its SVG's data-scenario), every chart that holds a series of
// another scenario than its own, or a point of another sweep than its
// series': a point's run without its value on the chart's axis must be
// the series' scenario.
const mixedInPage = `(() => {
  const out = [];
  const sweepOf = (run, axis) => run.split(" − ").map(side => side.split("/").filter(p => !p.startsWith(axis + "=")).join("/")).join(" − ");
  for (const block of document.querySelectorAll('script[type="application/json"]')) {
    const c = JSON.parse(block.textContent);
    const svg = block.closest("figure").querySelector("svg");
    if (!c.scenario || svg.dataset.scenario !== c.scenario) out.push(c.id + ": drawn as " + svg.dataset.scenario);
    for (const s of c.series) {
      if (s.scenario !== c.scenario) out.push(c.id + " " + s.name + ": series of " + s.scenario);
      for (const p of s.points || []) {
        if (sweepOf(p.run, c.axis) !== s.scenario) out.push(c.id + " " + s.name + ": point of " + p.run);
      }
    }
  }
  return out;
})()`

// overlappingLabels lists the pairs of labels of one chart that overlap:
// each label's box (rotated as drawn) against every other's, separated by
// the axes of their edges. A text box holds the font's ascent and descent,
// so two lines of a legend touch by a few pixels with no glyph meeting:
// only an overlap deeper than a third of the smaller box's height counts.
const overlappingLabels = `(() => {
  const quad = t => {
    const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const depth = (p, q) => {
    let least = Infinity;
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
        const len = Math.hypot(x2 - x1, y2 - y1) || 1, nx = (y1 - y2) / len, ny = (x2 - x1) / len;
        const proj = r => r.map(([x, y]) => x * nx + y * ny);
        const a = proj(p), b = proj(q);
        least = Math.min(least, Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)));
      }
    }
    return least;
  };
  const height = p => Math.min(Math.hypot(p[1][0] - p[0][0], p[1][1] - p[0][1]), Math.hypot(p[3][0] - p[0][0], p[3][1] - p[0][1]));
  const out = [];
  for (const svg of document.querySelectorAll("figure svg")) {
    const labels = Array.from(svg.querySelectorAll("text")).filter(t => t.textContent.trim() !== "").map(t => [t.textContent, quad(t)]);
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        const [a, p] = labels[i], [b, q] = labels[j];
        const d = depth(p, q);
        if (d > Math.min(height(p), height(q)) / 3) out.push(svg.dataset.scenario + ": " + a + " / " + b + " by " + d.toFixed(1) + " px");
      }
    }
  }
  return out;
})()`

// The report of a default main job (every shipped scenario, stored in
// testdata/mainjob), opened in a 1280-pixel window: no
// chart mixes scenarios, each scenario has its charts, no two labels of a
// chart overlap, and the page is no wider than the window (wide tables
// scroll in their own box). MESHBENCH_SCREENSHOT=FILE keeps the screenshot.
func TestMainJobReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; run without -short")
	}
	ins := openMainJob(t)
	dir := t.TempDir()
	paths, err := report.WriteFiles(dir, ins, []report.Format{report.FormatHTML}, report.Options{Prices: examplePrices(t)})
	require.NoError(t, err)
	actx, cancel := newChromium(t, dir)
	defer cancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(1280, 1024), chromedp.Navigate("file://"+paths[0])))

	mixed, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](mixedInPage))
	require.NoError(t, err)
	assert.Empty(t, mixed, "charts that mix scenarios")
	scenarios, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("section.scenario")).map(s => s.dataset.scenario + " by " + s.dataset.axis)`))
	require.NoError(t, err)
	assert.Equal(t, []string{"BenchmarkOneHop by c", "BenchmarkTwoHop by c", "BenchmarkProtocols/c=8 by protocol", "BenchmarkPlacement/c=32 by placement",
		"BenchmarkProxyThreads/c=16 by threads", "BenchmarkServiceTime/c=8 by service", "BenchmarkPayload/c=8 by payload",
		"BenchmarkRateLadder/c=16 by qps", "BenchmarkProxyKilled by c", "BenchmarkUserFlow by users", "BenchmarkTwoHop − BenchmarkOneHop by c"}, scenarios)
	overlaps, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](overlappingLabels))
	require.NoError(t, err)
	assert.Empty(t, overlaps, "labels that overlap")
	width, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	assert.LessOrEqual(t, width, 1280, "the page fits a 1280-pixel window")
	wide, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(d => d.scrollWidth > d.clientWidth)(document.querySelector("table.summary").parentElement)`))
	require.NoError(t, err)
	assert.True(t, wide, "the summary is wider than the page: it scrolls in its own box")
	loose, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("table").length - document.querySelectorAll("div.scroll > table").length`))
	require.NoError(t, err)
	assert.Zero(t, loose, "every table scrolls in its own box")

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Equal(t, 1280, img.Bounds().Dx(), "the screenshot is the 1280-pixel window's")
	if p := os.Getenv("MESHBENCH_SCREENSHOT"); p != "" {
		require.NoError(t, os.WriteFile(p, shot, 0o644))
	}

	// The check finds labels drawn over each other.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(`data:text/html,<figure><svg data-scenario="x" width="200" height="50"><text x="10" y="20">c=16 meshed</text><text x="14" y="22">c=32 meshed</text></svg></figure>`)))
	clash, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](overlappingLabels))
	require.NoError(t, err)
	assert.Len(t, clash, 1, "two labels drawn over each other")
}

// openInChromium loads the page in a new tab, checks it as
// TestHTMLReportInChromium says, and returns the ids of its chart data.
func openInChromium(actx context.Context, t *testing.T, path string) []string {
	t.Helper()
	url := "file://" + path
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	require.NoError(t, chromedp.Do(bctx), "start chromium")
	ev := &browserEvents{page: url}
	require.NoError(t, chromedp.Listen(bctx, ev.on))
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url)))

	charts, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("figure svg").length`))
	require.NoError(t, err)
	ids, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('script[type="application/json"]')).map(s => JSON.parse(s.textContent).id)`))
	require.NoError(t, err)
	assert.Equal(t, len(ids), charts, "%s: one drawing per chart data block", path)

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	colours, inked := inkOf(img)
	assert.Greater(t, colours, 20, "%s: a report with coloured charts has many colours", path)
	assert.Greater(t, inked, 0.01, "%s: more than 1 %% of the page is not background", path)
	if t.Failed() {
		_ = os.WriteFile(filepath.Join(os.TempDir(), "meshbench-report-screenshot.png"), shot, 0o644)
	}

	ev.mu.Lock()
	defer ev.mu.Unlock()
	assert.Empty(t, ev.errors, "%s: console errors", path)
	assert.Empty(t, ev.requests, "%s: requests beyond the page: the report must be self-contained", path)
	return ids
}

// inkOf counts the distinct colours of img and the share of its pixels that
// differ from the top-left one (the background).
func inkOf(img image.Image) (int, float64) {
	b := img.Bounds()
	bg := fmt.Sprint(img.At(b.Min.X, b.Min.Y))
	seen := map[string]bool{}
	inked, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			c := fmt.Sprint(img.At(x, y))
			seen[c] = true
			total++
			if c != bg {
				inked++
			}
		}
	}
	return len(seen), float64(inked) / float64(total)
}
