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
	exe := chromium(t)
	ins := openRecorded(t)
	dir := t.TempDir()
	o := report.Options{Prices: examplePrices(t)}
	single, err := report.WriteFiles(filepath.Join(dir, "single"), ins, []report.Format{report.FormatHTML}, o)
	require.NoError(t, err)
	compare, err := report.WriteFiles(filepath.Join(dir, "compare"), append(ins, candidate(t, ins[0])), []report.Format{report.FormatHTML}, o)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1280, 1024))
	defer acancel()

	ids := openInChromium(actx, t, single[0])
	assert.Equal(t, []string{"latency-one-hop", "throughput-one-hop", "loss-one-hop", "spectrum-one-hop", "rate-one-hop", "cpu-one-hop", "cpu1k-one-hop", "rss-one-hop",
		"latency-two-hop", "throughput-two-hop", "loss-two-hop", "spectrum-two-hop", "rate-two-hop", "cpu-two-hop", "cpu1k-two-hop", "rss-two-hop"}, ids)
	ids = openInChromium(actx, t, compare[0])
	assert.Len(t, ids, 2*16+6, "each run's charts and 3 per path to compare")
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
