package main

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// specialOrderNos are order numbers the OpenAPI document allows (any text
// without control or bidirectional formatting characters) that mean
// something in a URL.
var specialOrderNos = []struct{ name, no string }{
	{"slash", "A/B-%s"},
	{"double slash", "A//B-%s"},
	{"question mark", "Q?x=1-%s"},
	{"hash", "H#1-%s"},
	{"percent", "P%%41-%s"},
	{"plus", "P+1-%s"},
	{"space", "S 1-%s"},
	{"non-ASCII", "Bestellung-ä-%s"},
	{"ampersand and semicolon", "A&b;c=d-%s"},
	{"dots", "../..-%s"},
	{"backslash", `A\B-%s`},
	{"dot", "."},
	{"dot dot", ".."},
}

// orderNo is the case's number in this run (a project of its own).
func orderNo(format, suffix string) string {
	if !strings.Contains(format, "%s") {
		return format
	}
	return fmt.Sprintf(format, suffix)
}

var (
	linkRe = regexp.MustCompile(`<a [^>]*href="([^"]*)"[^>]*>([^<]*)</a>`)
	h1Re   = regexp.MustCompile(`<h1>([^<]*)</h1>`)
)

// TestIdentifiersInPaths: an order whose number holds URL-special characters
// is served by the API under its %-escaped number (the order and its
// invoice), found by the console's search, linked from the console's
// listing, its invoice's page and back, and its page names that order.
func TestIdentifiersInPaths(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	raw := &apitest.Client{T: t, BaseURL: baseURL}
	suffix := uuid.NewString()[:6]
	owner := signedIn(t, pid, "owner")
	base := "/console/p/" + pid + "/"

	for i, tc := range specialOrderNos {
		no := orderNo(tc.no, suffix)
		body, _ := json.Marshal(map[string]any{"orderNo": no, "financialStatus": "paid", "email": fmt.Sprintf("id%d-%s@example.com", i, suffix),
			"billingAddress":    map[string]any{"country_code": "DE", "name": "Max Muster", "street": "Weg 1", "postal_code": "10115", "city": "Berlin"},
			"items":             []map[string]any{{"name": "Online-Kurs", "quantity": 1, "unitGrossCents": 4900, "taxRate": 19}},
			"service_period":    map[string]any{"start_date": "2026-11-01", "end_date": "2026-11-30"},
			"creditRedemptions": []map[string]any{{"type": "referral_credit", "amountCents": 4900, "externalRef": "ref-" + suffix + fmt.Sprint(i)}},
			"grossTotalCents":   4900})
		if r := c.Do("POST", "/v1/orders", key, body, "Idempotency-Key", "id-"+suffix+fmt.Sprint(i)); r.Status != http.StatusCreated {
			t.Fatalf("POST /v1/orders %q: %d %s", no, r.Status, r.Body)
		}
	}

	for _, tc := range specialOrderNos {
		t.Run(tc.name, func(t *testing.T) {
			no := orderNo(tc.no, suffix)
			esc := url.PathEscape(no)
			if no == "." || no == ".." {
				// Clients resolve a bare "." or ".." as a path step; escaped it is a name.
				esc = strings.ReplaceAll(esc, ".", "%2E")
			}
			var number string
			testenv.Eventually(t, 60*time.Second, "order "+no+" invoiced and archived", func() bool {
				r := raw.Do("GET", "/v1/orders/"+esc, key, nil)
				if r.Status == http.StatusNotFound {
					return false
				}
				var st struct {
					Data struct {
						OrderNo, Status string
						Invoices        []struct{ Number, Status string }
					}
				}
				if err := json.Unmarshal(r.Body, &st); r.Status != http.StatusOK || err != nil || st.Data.OrderNo != no {
					t.Fatalf("GET /v1/orders/%s: %d %s", esc, r.Status, r.Body)
				}
				if len(st.Data.Invoices) == 1 && st.Data.Invoices[0].Status == "archived" {
					number = st.Data.Invoices[0].Number
					return true
				}
				return false
			})
			var inv struct{ Data struct{ ID, OrderNo string } }
			r := raw.Do("GET", "/v1/invoices/"+esc, key, nil)
			if err := json.Unmarshal(r.Body, &inv); r.Status != http.StatusOK || err != nil || inv.Data.OrderNo != no {
				t.Fatalf("GET /v1/invoices/%s: %d %s", esc, r.Status, r.Body)
			}
			if r := raw.Do("GET", "/v1/invoices/"+esc+"/xml", key, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), number) {
				t.Errorf("GET /v1/invoices/%s/xml: %d", esc, r.Status)
			}

			// The console: the search opens the order's page, the listing
			// and the invoice's page link to it.
			p := owner.get(base + "orders?q=" + url.QueryEscape(no))
			loc := p.header.Get("Location")
			if p.status != http.StatusSeeOther {
				t.Fatalf("search %q: %d", no, p.status)
			}
			orderPage(t, owner, loc, no)
			p = owner.get(base + "orders?list=1&q=" + url.QueryEscape(no))
			if href := linkTo(string(p.body), no); href != loc {
				t.Errorf("the search listing links %q to %q, the search opened %q", no, href, loc)
			}
			p = owner.get(base + "invoices/" + inv.Data.ID)
			href := linkTo(string(p.body), no)
			if href == "" {
				t.Fatalf("the invoice's page has no link to order %q", no)
			}
			op := orderPage(t, owner, href, no)
			if !strings.Contains(op, "/invoices/"+inv.Data.ID) {
				t.Errorf("the order's page of %q does not link its invoice", no)
			}
			// The language switch keeps the page.
			sw := linkTo(op, "Deutsch")
			if sw == "" {
				sw = linkTo(op, "English")
			}
			if sw == "" {
				t.Errorf("no language switch on the order's page of %q", no)
			} else {
				orderPage(t, owner, sw, no)
			}
		})
	}
}

// linkTo is the (unescaped) href of the first link whose text is text.
func linkTo(page, text string) string {
	for _, m := range linkRe.FindAllStringSubmatch(page, -1) {
		if html.UnescapeString(m[2]) == text {
			return html.UnescapeString(m[1])
		}
	}
	return ""
}

// orderPage opens href (a path as a browser sends it) and checks that it is
// the page of order no; it returns the page.
func orderPage(t *testing.T, u *consoleUser, href, no string) string {
	t.Helper()
	if !strings.HasPrefix(href, "/console/") {
		t.Fatalf("link %q to order %q is not a console path", href, no)
	}
	p := u.get(href)
	m := h1Re.FindSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.HasSuffix(html.UnescapeString(string(m[1])), " "+no) {
		t.Fatalf("GET %s (order %q): %d, heading %q", href, no, p.status, m)
	}
	return string(p.body)
}
