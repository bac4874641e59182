package httpx

import (
	"net/http"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"
)

// allowHeader returns the value of the Allow header of a 405 on req's path:
// the methods mounted on the route that path matches, in alphabetical
// order, comma-separated (RFC 9110, section 15.5.6, requires the header).
func allowHeader(mx *chi.Mux, methods []string, req *http.Request) string {
	path := req.URL.RawPath // chi routes on the escaped path when there is one
	if path == "" {
		path = req.URL.Path
	}
	var allowed []string
	for _, m := range methods {
		if mx.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		}
	}
	return strings.Join(allowed, ", ")
}

// routeMethods lists the distinct methods of routes, sorted.
func routeMethods(routes []Route) []string {
	seen := map[string]bool{}
	var out []string
	for _, rt := range routes {
		if !seen[rt.Method] {
			seen[rt.Method] = true
			out = append(out, rt.Method)
		}
	}
	sort.Strings(out)
	return out
}
