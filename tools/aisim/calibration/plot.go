package calibration

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// WriteSVG draws predicted against measured mean TTFT and mean TPOT, one log-log panel each,
// one point per row: colour by backend, filled for the fit rows and hollow for the validation
// rows; the diagonal is a perfect prediction and the grey band ±20% (TTFT) / ±10% (TPOT).
func WriteSVG(w io.Writer, results []Result, caption string) error {
	const (
		panelW, panelH = 420.0, 420.0
		margin         = 60.0
		gap            = 40.0
	)
	width := 2*panelW + 2*margin + gap
	height := panelH + 2*margin + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	panel := func(x0 float64, title string, band float64, get func(Result) (pred, meas float64)) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range results {
			if r.Err != nil {
				continue
			}
			p, m := get(r)
			lo, hi = math.Min(lo, math.Min(p, m)), math.Max(hi, math.Max(p, m))
		}
		if math.IsInf(lo, 0) {
			return
		}
		l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		sx := func(v float64) float64 { return x0 + (math.Log10(v)-l0)/(l1-l0)*panelW }
		sy := func(v float64) float64 { return margin + panelH - (math.Log10(v)-l0)/(l1-l0)*panelH }
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", x0, margin, panelW, panelH)
		// ±band around the diagonal.
		a, z := math.Pow(10, l0), math.Pow(10, l1)
		fmt.Fprintf(&b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="#ddd" opacity="0.6"/>`+"\n",
			sx(a), sy(a*(1+band)), sx(z/(1+band)), sy(z), sx(z), sy(z*(1-band)), sx(a/(1-band)), sy(a))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", sx(a), sy(a), sx(z), sy(z))
		for e := l0; e <= l1; e++ {
			v := math.Pow(10, e)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", sx(v), margin+panelH+16, v)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", x0-6, sy(v)+4, v)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14">%s</text>`+"\n", x0+panelW/2, margin-12, title)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">measured (ms)</text>`+"\n", x0+panelW/2, margin+panelH+34)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">aisim (ms)</text>`+"\n",
			x0-40, margin+panelH/2, x0-40, margin+panelH/2)
		for _, r := range results {
			if r.Err != nil {
				continue
			}
			p, m := get(r)
			col := output.BackendColor(r.Backend)
			fill := col
			if r.Validation {
				fill = "none"
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s" stroke="%s" opacity="0.8"/>`+"\n", sx(m), sy(p), fill, col)
		}
	}
	panel(margin, "mean TTFT", 0.2, func(r Result) (float64, float64) { return r.PredTTFTms, r.MeasuredTTFT })
	panel(margin+panelW+gap+margin/2, "mean TPOT", 0.1, func(r Result) (float64, float64) { return r.PredTPOTms, r.MeasuredTPOTms })
	// Legend and caption.
	x := margin
	y := height - 22
	for _, be := range output.Backends {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", x, y, be.Color, x+8, y+4, be.Name)
		x += 80
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">filled: fit rows, hollow: validation rows; grey: ±20%% / ±10%%</text>`+"\n", x, y+4)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#444">%s</text>`+"\n", margin, height-4, escape(caption))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
