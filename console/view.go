package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
)

// view is what a page's template gets.
type view struct {
	Lang      string
	Path      string     // the request's path as sent (%-escaped), for the language switch
	query     url.Values // the request's query, kept by the language switch
	Title     string
	Session   *account.Session
	sessionID string
	pending   *account.Session    // a session waiting for the second factor
	Member    *account.Membership // the project of a project page
	Nav       []navItem
	Error     string
	Notice    string
	Fields    map[string]string // field name → message
	Data      any
}

type navItem struct {
	Href, Label string
	Current     bool
}

// T is the text of key in the page's language (the key itself when missing).
func (v *view) T(key string) string {
	if s, ok := texts[v.Lang][key]; ok {
		return s
	}
	if s, ok := texts["en"][key]; ok {
		return s
	}
	return key
}

// CSRF is the form token of the signed-in session.
func (v *view) CSRF() string {
	if v.Session == nil {
		return ""
	}
	return v.Session.CSRF
}

// LangURL is this page in language lang: the path as sent (an order
// number's %2F stays one segment) and the query with lang set.
func (v *view) LangURL(lang string) string {
	q := url.Values{}
	for k, vs := range v.query {
		q[k] = vs
	}
	q.Set("lang", lang)
	return v.Path + "?" + q.Encode()
}

// Here is this page's path and query as sent (where a form returns to).
func (v *view) Here() string {
	if len(v.query) == 0 {
		return v.Path
	}
	return v.Path + "?" + v.query.Encode()
}

// OrderURL is the page of order number no. The number is one %-escaped
// path segment, so "/", "?", "#", "%", "+", spaces and any letter stay in
// it; "." and "..", which browsers resolve as path steps, go as a query
// parameter instead.
func (v *view) OrderURL(no string) string {
	if no == "." || no == ".." {
		return v.Base() + "order?no=" + url.QueryEscape(no)
	}
	return v.Base() + "orders/" + url.PathEscape(no)
}

// FieldError is the message of a form field ("" when none).
func (v *view) FieldError(name string) string { return v.Fields[name] }

// fieldError records a validation error at its field; other errors are returned.
func (v *view) fieldError(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind == apperr.Validation && ae.Field != "" {
		if v.Fields == nil {
			v.Fields = map[string]string{}
		}
		v.Fields[ae.Field] = ae.Message
		v.Error = ae.Field + ": " + ae.Message
		return nil
	}
	return err
}

// langCookie keeps the language chosen with the switch.
const langCookie = "o2i_lang"

// newView chooses the language: ?lang= (the switch, remembered in a
// cookie), the cookie, then Accept-Language; English by default.
func (c *Console) newView(w http.ResponseWriter, r *http.Request) *view {
	v := &view{Lang: "en", Path: r.URL.EscapedPath(), query: r.URL.Query()}
	if l := r.URL.Query().Get("lang"); l == "de" || l == "en" {
		v.Lang = l
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: l, Path: Prefix, HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode, MaxAge: 365 * 24 * 3600})
		return v
	}
	if ck, err := r.Cookie(langCookie); err == nil && (ck.Value == "de" || ck.Value == "en") {
		v.Lang = ck.Value
		return v
	}
	v.Lang = fromAcceptLanguage(r.Header.Get("Accept-Language"))
	return v
}

// fromAcceptLanguage picks de or en from an Accept-Language header: the
// first of them by quality (ties: the order written). Pure.
func fromAcceptLanguage(h string) string {
	best, bestQ := "en", -1.0
	for _, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if p := strings.TrimSpace(params); strings.HasPrefix(p, "q=") {
			var f float64
			if _, err := fmtSscan(p[2:], &f); err == nil {
				q = f
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		if (base == "de" || base == "en") && q > bestQ && q > 0 {
			best, bestQ = base, q
		}
	}
	return best
}
