package ui

import (
	"html/template"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// pageNames are the page templates under assets/, each rendered inside layout.html; any of them
// may use the blocks of verification.html and research.html.
var pageNames = []string{"requests", "request", "candidates", "candidate", "calibration", "error"}

var funcs = template.FuncMap{
	// num formats an optional metric.
	"num": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmtNum(*v)
	},
	// metrics lists a candidate's predicted metrics, each with its error band.
	"metrics": resultsview.Metrics,
	// value formats a metric's value with its unit, band says its expected error.
	"value": func(m resultsview.Metric) string { return metricText(resultsview.Metric{Value: m.Value, Unit: m.Unit}) },
	// fits says whether the operator judged that the cluster's GPU Nodes can hold a candidate.
	"fits": func(f *v1beta2.ClusterFit) bool { return f != nil && f.Fits != nil && *f.Fits },
	"band": func(b *resultsview.Band) string {
		if b == nil {
			return "not measured"
		}
		return bandText(b)
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/verification.html", "assets/research.html", "assets/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}
