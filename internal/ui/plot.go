package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// The scatter plot is drawn on the server as SVG: the page needs no script and no charting
// library, and a test reads it from the HTML.
const (
	plotW, plotH                                = 860, 460
	marginL, marginR, marginT, marginB          = 72, 190, 16, 52
	innerW, innerH                              = plotW - marginL - marginR, plotH - marginT - marginB
	legendX                                     = plotW - marginR + 18
	minRadius, radiusPerSqrtGPU, publishedWidth = 3.0, 1.6, 2.5
	// deployedGap is how far the deployed candidate's ring lies outside its marker.
	deployedGap = 5.0
)

func colorOf(backend string) string { return output.BackendColor(backend) }

func radiusOf(gpus int) float64 { return minRadius + radiusPerSqrtGPU*math.Sqrt(float64(max(gpus, 1))) }

// marker draws a point's shape: a circle for aggregated, a diamond for disaggregated, a square
// otherwise.
func marker(b *strings.Builder, mode string, x, y, r float64, attrs string) {
	switch mode {
	case string(v1beta2.ModeAggregated):
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" %s>`, x, y, r, attrs)
		return
	case string(v1beta2.ModeDisaggregated):
		r *= 1.3
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s>`, x, y-r, x+r, y, x, y+r, x-r, y, attrs)
		return
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s>`, x-r, y-r, 2*r, 2*r, attrs)
}

func closeMarker(b *strings.Builder, mode string) {
	switch mode {
	case string(v1beta2.ModeAggregated):
		b.WriteString("</circle>")
	case string(v1beta2.ModeDisaggregated):
		b.WriteString("</path>")
	default:
		b.WriteString("</rect>")
	}
}

// niceTicks returns round tick values covering [0, hi].
func niceTicks(hi float64) (ticks []float64, top float64) {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		hi = 1
	}
	raw := hi / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top = math.Ceil(hi/step) * step
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, v)
	}
	return ticks, top
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// slaITLThroughput is the throughput per user an ITL bound implies (1000 / itlMs tokens/s).
func slaITLThroughput(sla *v1beta2.SLASpec) (float64, bool) {
	if sla == nil || sla.ITLMs == nil || *sla.ITLMs <= 0 {
		return 0, false
	}
	return 1000 / *sla.ITLMs, true
}

// renderPlot draws the points: x is tokens/s per user, y throughput per GPU; colour by backend,
// marker by mode, size by GPUs; the Pareto front as a line; published candidates outlined and
// labelled with their rank; an ITL bound as a vertical line. Each point has a <title> (hover).
func renderPlot(p *Points, sla *v1beta2.SLASpec) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Throughput per GPU against tokens per second per user">`, plotW, plotH, plotW, plotH)
	maxX, maxY := 0.0, 0.0
	for _, pt := range p.Points {
		maxX, maxY = max(maxX, pt.ThroughputPerUser), max(maxY, pt.ThroughputPerGPU)
	}
	slaX, hasSLA := slaITLThroughput(sla)
	if hasSLA {
		maxX = max(maxX, slaX)
	}
	xt, xTop := niceTicks(maxX * 1.05)
	yt, yTop := niceTicks(maxY * 1.05)
	sx := func(v float64) float64 { return marginL + v/xTop*innerW }
	sy := func(v float64) float64 { return marginT + innerH - v/yTop*innerH }
	// Grid and axes.
	b.WriteString(`<g class="axes">`)
	for _, v := range xt {
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`,
			sx(v), marginT, sx(v), marginT+innerH, sx(v), marginT+innerH+16, fmtNum(v))
	}
	for _, v := range yt {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			marginL, sy(v), marginL+innerW, sy(v), marginL-6, sy(v)+4, fmtNum(v))
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>`, marginL, marginT, innerW, innerH)
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="middle">tokens/s per user</text>`, marginL+innerW/2, plotH-12)
	fmt.Fprintf(&b, `<text class="label" transform="translate(16 %d) rotate(-90)" text-anchor="middle">tokens/s per GPU</text>`, marginT+innerH/2)
	b.WriteString(`</g>`)
	if hasSLA {
		fmt.Fprintf(&b, `<g class="sla"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d">SLA: ITL ≤ %s ms</text></g>`,
			sx(slaX), marginT, sx(slaX), marginT+innerH, sx(slaX)+4, marginT+12, fmtNum(*sla.ITLMs))
	}
	// The Pareto front, by increasing throughput per user.
	byID := map[string]Point{}
	for _, pt := range p.Points {
		byID[pt.ID] = pt
	}
	if len(p.Front) > 0 {
		var coords []string
		for _, id := range p.Front {
			pt := byID[id]
			coords = append(coords, fmt.Sprintf("%.1f,%.1f", sx(pt.ThroughputPerUser), sy(pt.ThroughputPerGPU)))
		}
		fmt.Fprintf(&b, `<polyline id="front" class="front" data-points="%d" points="%s"/>`, len(p.Front), strings.Join(coords, " "))
	}
	// Points: unpublished first, then published by decreasing rank, so the best is on top.
	pts := slices.Clone(p.Points)
	slices.SortStableFunc(pts, func(a, c Point) int {
		ra, rc := rankKey(a), rankKey(c)
		return cmp.Compare(rc, ra)
	})
	b.WriteString(`<g class="points">`)
	var labels []rankLabel
	for _, pt := range pts {
		cls := "pt"
		attrs := fmt.Sprintf(`fill="%s"`, colorOf(pt.Backend))
		if pt.Published != "" {
			cls += " published"
			attrs += fmt.Sprintf(` stroke="#111" stroke-width="%.1f"`, publishedWidth)
		}
		if pt.Front {
			cls += " on-front"
		}
		attrs = fmt.Sprintf(`class="%s" data-id="%s" data-backend="%s" data-mode="%s" data-gpus="%d" `,
			cls, template.HTMLEscapeString(pt.ID), template.HTMLEscapeString(pt.Backend), template.HTMLEscapeString(pt.Mode), pt.GPUs) + attrs
		if pt.Published != "" {
			attrs += fmt.Sprintf(` data-candidate="%s" data-rank="%d"`, template.HTMLEscapeString(pt.Published), pt.Rank)
		}
		x, y := sx(pt.ThroughputPerUser), sy(pt.ThroughputPerGPU)
		marker(&b, pt.Mode, x, y, radiusOf(pt.GPUs), attrs)
		fmt.Fprintf(&b, "<title>%s</title>", template.HTMLEscapeString(hoverText(pt)))
		closeMarker(&b, pt.Mode)
		if pt.Published != "" {
			labels = append(labels, rankLabel{rank: pt.Rank, cx: x, cy: y, r: radiusOf(pt.GPUs)})
		}
		if pt.Deployed != "" {
			fmt.Fprintf(&b, `<circle id="deployed" class="deployed" cx="%.1f" cy="%.1f" r="%.1f" data-candidate="%s" data-deployment="%s"><title>deployed as %s</title></circle>`,
				x, y, radiusOf(pt.GPUs)+deployedGap, template.HTMLEscapeString(pt.Published), template.HTMLEscapeString(pt.Deployed), template.HTMLEscapeString(pt.Deployed))
		}
	}
	writeRankLabels(&b, labels)
	b.WriteString(`</g>`)
	writeLegend(&b, p)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built above with every text escaped
}

// rankLabel is the "#rank" next to a published point.
type rankLabel struct {
	rank int32
	// cx, cy and r are the point's marker.
	cx, cy, r float64
}

// Size of a rank label, in SVG units at the plot's font size.
const labelCharW, labelH = 6.5, 11.0

// writeRankLabels draws the labels over the points, best rank first, right of their point, moving
// a label down until it overlaps neither a label drawn before nor a published point's marker
// (published candidates are often close together).
func writeRankLabels(b *strings.Builder, labels []rankLabel) {
	slices.SortFunc(labels, func(a, c rankLabel) int { return cmp.Compare(a.rank, c.rank) })
	type box struct{ x0, y0, x1, y1 float64 }
	var placed []box
	for _, l := range labels {
		placed = append(placed, box{l.cx - l.r, l.cy - l.r, l.cx + l.r, l.cy + l.r})
	}
	for _, l := range labels {
		text := fmt.Sprintf("#%d", l.rank)
		w := labelCharW * float64(len(text))
		x, y := l.cx+l.r+3, l.cy-3
		bx := box{x, y - labelH, x + w, y}
		for range 12 {
			if !slices.ContainsFunc(placed, func(p box) bool {
				return bx.x0 < p.x1 && p.x0 < bx.x1 && bx.y0 < p.y1 && p.y0 < bx.y1
			}) {
				break
			}
			bx.y0, bx.y1 = bx.y0+labelH, bx.y1+labelH
		}
		placed = append(placed, bx)
		fmt.Fprintf(b, `<text class="rank" x="%.1f" y="%.1f">%s</text>`, bx.x0, bx.y1, text)
	}
}

func rankKey(p Point) int32 {
	if p.Published == "" {
		return math.MaxInt32
	}
	return p.Rank
}

func hoverText(pt Point) string {
	lines := []string{pt.ID}
	if pt.Published != "" {
		lines[0] += fmt.Sprintf(" — published as %s (rank %d%s)", pt.Published, pt.Rank, prefixed(", ", pt.ParetoRole))
	}
	if pt.Deployed != "" {
		lines = append(lines, "deployed as "+pt.Deployed)
	}
	lines = append(lines, fmt.Sprintf("%s, %s, %d GPUs", cmp.Or(pt.Backend, "?"), cmp.Or(pt.Mode, "?"), pt.GPUs))
	// Every predicted metric the point has, each with its error band.
	for _, m := range resultsview.Metrics(pt.metrics) {
		if m.Value != nil {
			lines = append(lines, m.Name+" "+metricText(m))
		}
	}
	if c := pt.Cost; c != nil {
		lines = append(lines, costText(c))
	}
	if pt.Shape != "" {
		lines = append(lines, pt.Shape)
	}
	if pt.Front {
		lines = append(lines, "on the Pareto front")
	}
	return strings.Join(lines, "\n")
}

// metricText formats a predicted metric with its unit and error band: "154 ms ±22% (4 in 5
// within ±41%)", "–" when there is no value.
func metricText(m resultsview.Metric) string {
	if m.Value == nil {
		return "–"
	}
	return fmtNum(*m.Value) + " " + m.Unit + prefixed(" ", bandText(m.Band))
}

// bandText is an error band as people read it: "±22% (4 in 5 within ±41%)"; "" for none.
func bandText(b *resultsview.Band) string {
	switch {
	case b == nil:
		return ""
	case b.P80Pct > 0:
		return fmt.Sprintf("±%.0f%% (4 in 5 within ±%.0f%%)", b.MedianPct, b.P80Pct)
	}
	return fmt.Sprintf("±%.0f%%", b.MedianPct)
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// costText is a cost for display: "28.00 USD per hour, 0.7778 USD per million output tokens".
func costText(c *v1beta2.CandidateCost) string {
	text := c.PerHour + " " + c.Currency + " per hour"
	if c.PerMillionOutputTokens != "" {
		text += ", " + c.PerMillionOutputTokens + " " + c.Currency + " per million output tokens"
	}
	return text
}

func writeLegend(b *strings.Builder, p *Points) {
	y := marginT + 10
	row := func() int { y += 20; return y }
	fmt.Fprintf(b, `<g class="legend"><text x="%d" y="%d" class="label">backend</text>`, legendX, y)
	backends := map[string]bool{}
	modes := map[string]bool{}
	for _, pt := range p.Points {
		backends[pt.Backend], modes[pt.Mode] = true, true
	}
	for _, be := range output.Backends {
		yy := row()
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="5" fill="%s"/><text x="%d" y="%d">%s</text>`, legendX+6, yy-4, be.Color, legendX+18, yy, be.Name)
	}
	for be := range backends {
		if _, known := output.LookupBackend(be); !known {
			yy := row()
			fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="5" fill="%s"/><text x="%d" y="%d">other</text>`, legendX+6, yy-4, output.OtherBackendColor, legendX+18, yy)
			break
		}
	}
	y += 10
	fmt.Fprintf(b, `<text x="%d" y="%d" class="label">mode</text>`, legendX, row())
	for _, m := range []string{string(v1beta2.ModeAggregated), string(v1beta2.ModeDisaggregated)} {
		yy := row()
		marker(b, m, float64(legendX+6), float64(yy-4), 5, `fill="#999"`)
		closeMarker(b, m)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`, legendX+18, yy, m)
	}
	y += 10
	fmt.Fprintf(b, `<text x="%d" y="%d" class="label">size: GPUs</text>`, legendX, row())
	yy := row()
	for i, g := range []int{1, 8, 32} {
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="%.1f" fill="none" stroke="#666"/><text x="%d" y="%d" text-anchor="middle" font-size="9">%d</text>`,
			legendX+10+i*42, yy-2, radiusOf(g), legendX+10+i*42, yy+22, g)
	}
	y += 30
	yy = row()
	fmt.Fprintf(b, `<line class="front" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="%d" y="%d">Pareto front</text>`, legendX, yy-4, legendX+14, yy-4, legendX+18, yy)
	yy = row()
	fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="5" fill="#fff" stroke="#111" stroke-width="%.1f"/><text x="%d" y="%d">published (#rank)</text>`, legendX+6, yy-4, publishedWidth, legendX+18, yy)
	yy = row()
	fmt.Fprintf(b, `<circle class="deployed" cx="%d" cy="%d" r="7"/><text x="%d" y="%d">deployed</text>`, legendX+6, yy-4, legendX+18, yy)
	yy = row()
	fmt.Fprintf(b, `<line class="sla-key" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="%d" y="%d">SLA bound</text>`, legendX, yy-4, legendX+14, yy-4, legendX+18, yy)
	b.WriteString(`</g>`)
}
