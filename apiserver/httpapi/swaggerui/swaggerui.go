// Package swaggerui serves the interactive API browser at /swagger from assets embedded in the
// binary (swagger-ui-dist from the npm registry, `make swagger-ui` refreshes them), so that it
// works offline like the rest of the platform.
package swaggerui

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.New("swagger").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>platform API</title>
<link rel="stylesheet" href="{{.Base}}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{{.Base}}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({url: {{.Spec}}, dom_id: "#swagger-ui", deepLinking: true});
</script>
</body>
</html>
`))

// Register serves the browser at path for the OpenAPI document at specURL.
func Register(mux *http.ServeMux, path, specURL string) {
	static, _ := fs.Sub(assets, "assets")
	mux.Handle(path+"/", http.StripPrefix(path+"/", http.FileServerFS(static)))
	mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = page.Execute(w, struct{ Base, Spec string }{Base: path, Spec: specURL})
	})
}
