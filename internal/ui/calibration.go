package ui

import (
	"net/http"
	"strconv"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
)

// calibrationRow is one correction of the profile, as the calibration page shows it.
type calibrationRow struct {
	Backend, System, Model, Mode, Parallelism, Metric string
	Ratio, Spread                                     string
	Count                                             int
	Used                                              bool
}

// calibrationView is the calibration page: where the profile is, its corrections and how many
// observations it holds.
type calibrationView struct {
	Namespace, ConfigMap string
	Observations, Cap    int
	// Ignored counts the observations of another namespace, or not valid: the operator uses only
	// the namespace's own valid ones (calibration.Profile.Of).
	Ignored         int
	MinObservations int32
	Newest          string
	Rows            []calibrationRow
}

// calibrationRows lays out the profile's corrections for the page (pure).
func calibrationRows(p calibration.Profile, minCount int32) []calibrationRow {
	var rows []calibrationRow
	for _, c := range p.Corrections() {
		k := c.Key
		rows = append(rows, calibrationRow{Backend: k.Backend, System: k.System, Model: k.Model, Mode: k.Mode,
			Parallelism: k.Parallelism, Metric: c.Metric, Ratio: strconv.FormatFloat(c.Ratio, 'f', 3, 64),
			Spread: strconv.FormatFloat(c.Spread, 'f', 3, 64), Count: c.Count, Used: c.Count >= int(minCount)})
	}
	return rows
}

func (s *Server) calibrationPage(w http.ResponseWriter, r *http.Request) {
	if s.calibrationNS == "" {
		s.render(w, http.StatusOK, "calibration", map[string]any{"Title": "Calibration", "V": calibrationView{}})
		return
	}
	stored, err := calibration.Load(r.Context(), s.c, s.calibrationNS)
	if err != nil {
		s.htmlError(w, err)
		return
	}
	p := stored.Of(s.calibrationNS)
	v := calibrationView{Namespace: s.calibrationNS, ConfigMap: calibration.ConfigMapName, Observations: len(p.Observations),
		Ignored: len(stored.Observations) - len(p.Observations),
		Cap:     calibration.MaxObservations, MinObservations: s.minObservations, Rows: calibrationRows(p, s.minObservations)}
	if n := len(p.Observations); n > 0 {
		v.Newest = p.Observations[n-1].MeasuredAt.UTC().Format(time.RFC3339)
	}
	s.render(w, http.StatusOK, "calibration", map[string]any{"Title": "Calibration", "V": v})
}
