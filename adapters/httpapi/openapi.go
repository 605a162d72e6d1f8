package httpapi

import (
	_ "embed"
	"net/http"
)

// The Go client in apiclient is generated from the document; oapi-codegen is
// a tool dependency pinned in go.mod.
//go:generate go tool oapi-codegen -config apiclient/oapi-codegen.yaml -o apiclient/client.gen.go openapi.json

// openAPIDocument describes every route of NewHandler (OpenAPI 3); a test
// walks the router and holds the two in step.
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers GET /openapi.json; it needs no token, as it holds no
// data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
