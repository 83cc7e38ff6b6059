package ui

import "html/template"

// pageNames are the page templates under assets/, each rendered inside layout.html.
var pageNames = []string{"requests", "request", "candidates", "candidate", "error"}

var funcs = template.FuncMap{
	// num formats an optional metric.
	"num": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmtNum(*v)
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}
