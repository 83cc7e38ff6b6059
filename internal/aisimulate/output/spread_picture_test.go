package output_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

var updatePicture = flag.Bool("update-picture", false, "rewrite docs/images/pareto-spread.svg")

// picturePath is the picture of docs/design/results.md, "A spread Pareto set".
var picturePath = filepath.Join("..", "..", "..", "docs", "images", "pareto-spread.svg")

// pictureFront is a front like the demo's Pareto request: 16 points from 20 to 260 tokens/s per
// user, crowded at the throughput-per-GPU end.
func pictureFront() []frontPoint {
	users := []float64{20, 22, 25, 28, 32, 37, 42, 48, 60, 75, 95, 120, 150, 185, 220, 260}
	front := make([]frontPoint, len(users))
	for i, u := range users {
		gpu := 150 + 2850*(1-math.Pow((u-20)/240, 1.6))
		front[i] = frontPoint{id: fmt.Sprintf("p%d", i), gpu: math.Round(gpu), user: u}
	}
	return front
}

// TestSpreadPicture draws SpreadFront's choice of 6 points of pictureFront and checks that the
// picture in the docs is that drawing (go test -run TestSpreadPicture -update-picture rewrites it).
func TestSpreadPicture(t *testing.T) {
	got := spreadPicture(pictureFront(), 6)
	if *updatePicture {
		if err := os.WriteFile(picturePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(picturePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what SpreadFront chooses: run make pareto-spread-picture", picturePath)
	}
}

// spreadPicture is an SVG of front on axes spanning its range (so the plot is the normalized
// space SpreadFront measures in), the line between the ends, the knee's distance to it, and the
// n chosen points with their rank and role.
func spreadPicture(front []frontPoint, n int) []byte {
	const size, left, top, pad = 360.0, 70.0, 30.0, 12.0
	picks := output.SpreadFront(front, n, func(p frontPoint) (float64, float64) { return p.gpu, p.user })
	loX, hiX, loY, hiY := front[0].user, front[len(front)-1].user, front[len(front)-1].gpu, front[0].gpu
	sx := func(u float64) float64 { return left + pad + (u-loX)/(hiX-loX)*(size-2*pad) }
	sy := func(g float64) float64 { return top + pad + (hiY-g)/(hiY-loY)*(size-2*pad) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n",
		left+size+170, top+size+50, left+size+170, top+size+50)
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, top, size, size)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">tokens/s per user (%g to %g)</text>`+"\n", left+size/2, top+size+30, loX, hiX)
	fmt.Fprintf(&b, `<text transform="translate(20 %.0f) rotate(-90)" text-anchor="middle">tokens/s per GPU (%g to %g)</text>`+"\n", top+size/2, loY, hiY)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-weight="bold">%d of the %d points of a Pareto front</text>`+"\n", left, n, len(front))
	// The line between the ends and the knee's distance to it.
	first, last := front[0], front[len(front)-1]
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>`+"\n", sx(first.user), sy(first.gpu), sx(last.user), sy(last.gpu))
	var pts []string
	for _, p := range front {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.user), sy(p.gpu)))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#444" points="%s"/>`+"\n", strings.Join(pts, " "))
	for _, p := range front {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#bbb"/>`+"\n", sx(p.user), sy(p.gpu))
	}
	colors := map[string]string{output.RoleMaxThroughputPerGPU: "#0072b2", output.RoleKnee: "#d55e00",
		output.RoleMaxThroughputPerUser: "#009e73", output.RoleSpread: "#cc79a7"}
	for i, pk := range picks {
		p := front[pk.Index]
		x, y := sx(p.user), sy(p.gpu)
		if pk.Role == output.RoleKnee {
			// The foot of the perpendicular from the knee to the line between the ends.
			x0, y0, x1, y1 := sx(first.user), sy(first.gpu), sx(last.user), sy(last.gpu)
			k := ((x-x0)*(x1-x0) + (y-y0)*(y1-y0)) / ((x1-x0)*(x1-x0) + (y1-y0)*(y1-y0))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 2"/>`+"\n", x, y, x0+k*(x1-x0), y0+k*(y1-y0), colors[pk.Role])
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`+"\n", x, y, colors[pk.Role])
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">#%d %s</text>`+"\n", x+9, y-6, i+1, pk.Role)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#666">grey: not published</text>`+"\n", left+size+12, top+14)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
