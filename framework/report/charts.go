package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// ChartKind is how a chart's series are drawn.
type ChartKind string

// The kinds of chart a report draws.
const (
	// Lines draws each series as a line through its points, with the
	// interval [Lo, Hi] of each point as an error bar; X is logarithmic
	// (concurrency doubles from point to point).
	Lines ChartKind = "lines"
	// Spectrum draws latency against percentile, the percentile axis in
	// nines (50, 90, 99, 99.9, 99.99) as HdrHistogram plots do.
	Spectrum ChartKind = "spectrum"
	// Stacked draws one bar per category (Point.Label), the series stacked.
	Stacked ChartKind = "stacked"
	// Rate draws lines like Lines, against a linear X: a request rate.
	Rate ChartKind = "rate"
	// Points draws each series as points with their intervals, never
	// joined, over categories (Point.Label at X = 0, 1, 2 …): a
	// categorical axis such as placement or protocol.
	Points ChartKind = "points"
)

// Chart is one chart's data, exactly as drawn: the report embeds it as JSON
// beside the SVG, so a reader or a test can check it against the results.
type Chart struct {
	// ID names the chart in the report's HTML and its embedded JSON.
	ID string `json:"id"`
	// Title is the chart's heading, as printed above it.
	Title string `json:"title"`
	// Kind is how the series are drawn.
	Kind ChartKind `json:"kind"`
	// XLabel and YLabel are the axes' titles, with their units.
	XLabel string `json:"xLabel"`
	YLabel string `json:"yLabel"`
	// LogY draws the values on a logarithmic axis (latencies that span
	// decades, from a loopback p50 to a queued p99.9).
	LogY bool `json:"logY,omitempty"`
	// Scenario is the one sweep the chart draws, e.g. "BenchmarkOneHop" or
	// "BenchmarkPayload/c=8": the labels its points share, all but Axis.
	// A derived chart, such as the extra hop, names both scenarios it
	// subtracts: "BenchmarkTwoHop − BenchmarkOneHop".
	Scenario string `json:"scenario,omitempty"`
	// Axis is the label the sweep varies (c, payload, qps, placement …).
	Axis string `json:"axis,omitempty"`
	// Series are the lines or layers drawn, in legend order.
	Series []Series `json:"series"`
}

// Series is one line or one stacked layer.
type Series struct {
	// Name is the series' legend entry.
	Name string `json:"name"`
	// Scenario is the chart's: every point of the series is of that sweep.
	Scenario string `json:"scenario,omitempty"`
	// Points are the series' values, in X order.
	Points []Point `json:"points"`
	// Colour picks the palette entry (-1: by position) and Dashed the line
	// style; they are looks only, not data.
	Colour int  `json:"-"`
	Dashed bool `json:"-"`
}

// Point is one value: a median with its interval over repeats (Lo = Hi =
// Y when there is none), at X, or in category Label for Stacked and Points
// charts; on other charts Label is how X is printed (c=8, 16KiB).
type Point struct {
	// X is the position on the X axis, in XLabel's unit (for Points charts,
	// the category's index).
	X float64 `json:"x"`
	// Y is the median over repeats, in YLabel's unit.
	Y float64 `json:"y"`
	// Lo and Hi bound Y's interval over repeats, in Y's unit.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// Label is the category, or how X is printed.
	Label string `json:"label,omitempty"`
	// Run is the comparison the value is of (Comparison.Scenario, e.g.
	// "BenchmarkPayload/payload=16KiB/c=8"); for a difference, both,
	// joined by " − ".
	Run string `json:"run,omitempty"`
}

var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

// SVG draws the chart as an SVG document without the XML prolog, ready to
// inline in HTML. Fonts are not embedded: the browser's are used.
func (c Chart) SVG() (string, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text, p.Y.Label.Text = c.XLabel, c.YLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var err error
	switch c.Kind {
	case Stacked:
		err = c.addStacked(p)
	case Points:
		err = c.addPoints(p)
	default:
		err = c.addLines(p)
	}
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", c.ID, err)
	}
	c.scaleY(p)
	canvas := vgsvg.NewWith(vgsvg.UseWH(16*vg.Centimeter, 9*vg.Centimeter), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(canvas))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return "", fmt.Errorf("chart %s: %w", c.ID, err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// scaleY leaves room above the data for the legend, one line per series,
// and draws a logarithmic axis when the chart asks for one and every value
// is positive.
func (c Chart) scaleY(p *plot.Plot) {
	lo, entries := math.Inf(1), 0
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			entries++
		}
		for _, q := range s.Points {
			lo = math.Min(lo, math.Min(q.Lo, q.Y))
		}
	}
	if math.IsInf(lo, 1) || !(p.Y.Max >= p.Y.Min) || math.IsInf(p.Y.Max-p.Y.Min, 0) {
		return // nothing drawn: gonum's empty frame
	}
	// The share of the height the legend takes, with a margin.
	free := 1 - math.Min(0.55, 0.075*float64(entries)+0.05)
	if c.LogY && lo > 0 && !math.IsInf(lo, 1) {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min = lo / 1.5
		p.Y.Max = p.Y.Min * math.Pow(math.Max(p.Y.Max, p.Y.Min*1.5)/p.Y.Min, 1/free)
		return
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/free
}

// xys adapts points to gonum's XYer and YErrorer.
type xys []Point

// Len is the number of points (plotter.XYer and plotter.Valuer).
func (p xys) Len() int { return len(p) }

// XY is point i's X and Y, in the chart's units (plotter.XYer).
func (p xys) XY(i int) (float64, float64) { return p[i].X, p[i].Y }

// YError is how far point i's interval reaches below and above Y, in Y's
// unit (plotter.YErrorer).
func (p xys) YError(i int) (float64, float64) { return p[i].Y - p[i].Lo, p[i].Hi - p[i].Y }

// Value is point i's Y, a bar's height (plotter.Valuer).
func (p xys) Value(i int) float64 { return p[i].Y }

func labelsOf(ps []Point) []string {
	out := make([]string, len(ps))
	for i, q := range ps {
		out[i] = q.Label
	}
	return out
}

// addLines draws each series with points as a line with its points and
// error bars, then sets the X axis: nines for a Spectrum, linear for a
// Rate, and otherwise logarithmic over the points' range when it is
// positive.
func (c Chart) addLines(p *plot.Plot) error {
	var xs []float64
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		if err := addSeries(p, i, s); err != nil {
			return err
		}
		for _, q := range s.Points {
			xs = append(xs, q.X)
		}
	}
	c.scaleX(p, xs)
	return nil
}

// addSeries draws series s, the i-th of its chart, as a line (dashed if
// asked), its points (larger when it is one marked point) and their error
// bars, in its palette colour, and adds it to the legend.
func addSeries(p *plot.Plot, i int, s Series) error {
	l, err := plotter.NewLine(xys(s.Points))
	if err != nil {
		return fmt.Errorf("series %s: %w", s.Name, err)
	}
	col := palette[i%len(palette)]
	if s.Colour >= 0 {
		col = palette[s.Colour%len(palette)]
	}
	l.Color = col
	l.Width = vg.Points(1.5)
	if s.Dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	sc, err := plotter.NewScatter(xys(s.Points))
	if err != nil {
		return fmt.Errorf("series %s: %w", s.Name, err)
	}
	sc.Color = col
	sc.Radius = vg.Points(2)
	if len(s.Points) == 1 { // a marked point, such as a knee
		sc.Radius = vg.Points(5)
	}
	eb, err := plotter.NewYErrorBars(xys(s.Points))
	if err != nil {
		return fmt.Errorf("series %s: %w", s.Name, err)
	}
	eb.Color = col
	p.Add(l, sc, eb)
	p.Legend.Add(s.Name, l)
	return nil
}

// scaleX sets the X axis for the chart's kind: nines for a Spectrum,
// gonum's linear default for a Rate, and otherwise a logarithmic axis over
// xs, the points' X values, when they are all positive.
func (c Chart) scaleX(p *plot.Plot, xs []float64) {
	switch c.Kind {
	case Spectrum:
		p.X.Scale = nines{}
		p.X.Tick.Marker = plot.ConstantTicks(tickAt([]float64{50, 90, 99, 99.9, 99.99}, "%g%%"))
		return
	case Rate:
		return
	}
	if len(xs) == 0 {
		return // nothing measured: an empty frame
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo <= 0 {
		return // a log axis needs positive values: keep it linear
	}
	// Set the range: with a single point gonum would widen it through 0,
	// which a log axis cannot draw.
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	p.X.Tick.Marker = plot.ConstantTicks(c.ticks())
}

// ticks are one labelled tick at each distinct X of the chart's points,
// printed as the point's Label (c=8, 16KiB) or else as the number.
func (c Chart) ticks() []plot.Tick {
	seen := map[float64]bool{}
	var ts []plot.Tick
	for _, s := range c.Series {
		for _, q := range s.Points {
			if seen[q.X] {
				continue
			}
			seen[q.X] = true
			label := q.Label
			if label == "" {
				label = strings.TrimSuffix(fmt.Sprintf("%g", q.X), ".0")
			}
			ts = append(ts, plot.Tick{Value: q.X, Label: label})
		}
	}
	return ts
}

// addPoints draws each series as points with error bars over categories,
// the series side by side within a category, and no line between them.
func (c Chart) addPoints(p *plot.Plot) error {
	var names []string
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		shifted := make(xys, len(s.Points))
		for j, q := range s.Points {
			shifted[j] = q
			shifted[j].X += 0.5*(float64(i)+0.5)/float64(len(c.Series)) - 0.25
			for int(q.X) >= len(names) {
				names = append(names, "")
			}
			names[int(q.X)] = q.Label
		}
		col := palette[i%len(palette)]
		if s.Colour >= 0 {
			col = palette[s.Colour%len(palette)]
		}
		sc, err := plotter.NewScatter(shifted)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		sc.Color, sc.Radius = col, vg.Points(3)
		if s.Dashed {
			sc.Shape = draw.RingGlyph{}
		} else {
			sc.Shape = draw.CircleGlyph{}
		}
		eb, err := plotter.NewYErrorBars(shifted)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		eb.Color = col
		p.Add(sc, eb)
		p.Legend.Add(s.Name, sc)
	}
	if len(names) == 0 {
		return nil // nothing measured: an empty frame
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	return nil
}

func (c Chart) addStacked(p *plot.Plot) error {
	var below *plotter.BarChart
	var labels []string
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		b, err := plotter.NewBarChart(xys(s.Points), vg.Points(14))
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if len(labels) == 0 {
			labels = labelsOf(s.Points)
		}
	}
	if len(labels) == 0 {
		return nil // nothing measured: an empty frame
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return nil
}

// tickAt makes one labelled tick at each distinct value of vs.
func tickAt(vs []float64, format string) []plot.Tick {
	seen := map[float64]bool{}
	var ts []plot.Tick
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			ts = append(ts, plot.Tick{Value: v, Label: strings.TrimSuffix(fmt.Sprintf(format, v), ".0")})
		}
	}
	return ts
}

// nines maps a percentile p to -log10(1 - p/100), so that 90, 99, 99.9 and
// 99.99 are evenly spaced.
type nines struct{}

// Normalize places percentile x between lo and hi on the nines scale, 0 at
// lo and 1 at hi; percentiles above 99.9999 count as 99.9999
// (plot.Normalizer).
func (nines) Normalize(lo, hi, x float64) float64 {
	f := func(p float64) float64 { return -math.Log10(1 - math.Min(p, 99.9999)/100) }
	return (f(x) - f(lo)) / (f(hi) - f(lo))
}

// SpectrumPercentiles are the percentiles a spectrum chart plots: evenly
// spaced in nines from 50 % to 99.99 %.
func SpectrumPercentiles() []float64 {
	var ps []float64
	for n := math.Log10(2); n <= 4.0001; n += 0.1 {
		p := 100 * (1 - math.Pow(10, -n))
		ps = append(ps, round4(p))
	}
	ps[len(ps)-1] = 99.99
	return ps
}

// round4 rounds a percentile to 4 decimals so that it prints cleanly.
func round4(p float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(p, 'f', 4, 64), 64)
	return v
}
