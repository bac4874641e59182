package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// taskSpec is a task row as the write side records it.
type taskSpec struct {
	kind, subject, status string
	details               string // JSON object
	created               time.Time
	resolution            *string
}

// addTask inserts a task of the env's project and returns its id. A
// resolved task is resolved an hour after its creation.
func (e *env) addTask(s taskSpec) string {
	e.t.Helper()
	id := uuid.NewString()
	if s.status == "" {
		s.status = "open"
	}
	if s.details == "" {
		s.details = "{}"
	}
	var resolved *time.Time
	if s.status == "resolved" {
		r := s.created.Add(time.Hour)
		resolved = &r
	}
	_, err := e.pool.Exec(context.Background(), `INSERT INTO tasks (id, project_id, kind, subject, details, status, created_at, resolved_at, resolution)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9)`, id, e.project, s.kind, s.subject, s.details, s.status, s.created, resolved, s.resolution)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

type taskPage struct {
	Data       []query.Task `json:"data"`
	NextCursor *string      `json:"nextCursor"`
	HasMore    bool         `json:"hasMore"`
}

func (e *env) listTasks(q string) (taskPage, apitest.Response) {
	e.t.Helper()
	r := e.c.Do("GET", "/v1/tasks"+q, e.key, nil)
	var p taskPage
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &p); err != nil {
			e.t.Fatal(err)
		}
	}
	return p, r
}

func TestTaskListFiltersAndParameterErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	note := "retried: handled"
	specs := []taskSpec{
		{kind: "xrechnung_contact_phone_missing", subject: "T-1", details: `{"orderNo":"T-1","details":"no phone"}`},
		{kind: "product_without_revenue_recognition", subject: "T-2", details: `{"orderNo":"T-2","details":"no period"}`},
		{kind: "invoice_validation_failed", subject: "TEST-2026-000001", details: `{"orderNo":"T-1","number":"TEST-2026-000001","rules":["BR-DE-6"]}`},
		{kind: "payment_amount_mismatch", subject: "T-3", details: `{"orderNo":"T-3","paidCents":1000,"dueCents":1190}`},
		{kind: "payment_without_order", subject: "pi_1", details: `{"paymentRef":"pi_1","amountCents":1190,"currency":"EUR"}`},
		{kind: "credit_balance_mismatch", subject: "a@example.com", details: `{"email":"a@example.com","reportedCents":500,"computedCents":400}`},
		{kind: "invoicing_failed", subject: "T-1", status: "resolved", resolution: &note, details: `{"orderNo":"T-1","error":"boom","attempts":3}`},
		{kind: "payment_without_order", subject: "pi_2", status: "resolved", details: `{"paymentRef":"pi_2"}`},
	}
	for i := range specs {
		specs[i].created = t0.Add(time.Duration(i) * time.Second)
		e.addTask(specs[i])
	}
	tests := map[string]int{
		"":                                   8,
		"?status=open":                       6,
		"?status=resolved":                   2,
		"?type=payment_without_order":        2,
		"?type=invoicing_failed":             1,
		"?type=no_such_type":                 0,
		"?orderNo=T-1":                       3,
		"?orderNo=T-1&status=open":           2,
		"?orderNo=T-1&type=invoicing_failed": 1,
		"?orderNo=pi_1":                      0, // a payment reference is no order number
		"?limit=3":                           3,
		"?status=":                           8, // empty means not given
	}
	for q, want := range tests {
		p, r := e.listTasks(q)
		if r.Status != 200 {
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
			continue
		}
		if len(p.Data) != want {
			t.Errorf("%s: %d tasks, want %d", q, len(p.Data), want)
		}
	}

	// The objects: type from kind, orderNo from details, details as recorded.
	p, _ := e.listTasks("?type=payment_amount_mismatch")
	if len(p.Data) != 1 || p.Data[0].OrderNo == nil || *p.Data[0].OrderNo != "T-3" || p.Data[0].Type != "payment_amount_mismatch" ||
		p.Data[0].Status != "open" || p.Data[0].ResolvedAt != nil || p.Data[0].Resolution != nil ||
		p.Data[0].CreatedAt != specs[3].created.Format(time.RFC3339Nano) {
		t.Fatalf("payment_amount_mismatch task: %+v", p.Data)
	}
	var details map[string]json.RawMessage
	if err := json.Unmarshal(p.Data[0].Details, &details); err != nil || string(details["paidCents"]) != "1000" || string(details["dueCents"]) != "1190" {
		t.Errorf("details %s (%v), want the recorded integers", p.Data[0].Details, err)
	}
	if p, _ := e.listTasks("?type=credit_balance_mismatch"); len(p.Data) != 1 || p.Data[0].OrderNo != nil {
		t.Errorf("a task without details.orderNo must have orderNo null: %+v", p.Data)
	}

	first, _ := e.listTasks("?limit=2&status=open")
	invoices, _ := e.list("?limit=1")
	errs := []struct{ q, field string }{
		{"?status=done", "status"}, {"?status=OPEN", "status"}, {"?status=open&status=resolved", "status"},
		{"?type=Not-A-Type", "type"}, {"?type=" + strings.Repeat("x", 101), "type"},
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?limit=abc", "limit"},
		{"?cursor=garbage", "cursor"},
		{"?cursor=" + tamper(*first.NextCursor) + "&status=open", "cursor"},
		{"?cursor=" + *first.NextCursor, "cursor"},                      // issued for other filters
		{"?cursor=" + *first.NextCursor + "&status=resolved", "cursor"}, // issued for other filters
		{"?cursor=" + *invoices.NextCursor, "cursor"},                   // a cursor of the invoice listing
	}
	for _, tt := range errs {
		_, r := e.listTasks(tt.q)
		code, field := r.ErrorCode(t)
		if r.Status != 422 || code != "validation_failed" || field != tt.field {
			t.Errorf("%s: %d %s %q, want 422 validation_failed %q", tt.q, r.Status, code, field, tt.field)
		}
	}
	// A task cursor is not an invoice cursor either.
	if _, r := e.list("?cursor=" + *first.NextCursor); r.Status != 422 {
		t.Errorf("task cursor on the invoice listing: %d", r.Status)
	}
	// A cursor of another project is refused.
	other := newEnv(t, nil)
	r := other.c.Do("GET", "/v1/tasks?limit=2&status=open&cursor="+*first.NextCursor, other.key, nil)
	if _, field := r.ErrorCode(t); r.Status != 422 || field != "cursor" {
		t.Errorf("foreign cursor: %d field %q", r.Status, field)
	}
}

// TestTaskPaginationReturnsEachTaskOnce walks every page, unfiltered and
// filtered, over tasks of which many share a creation time: each comes once,
// in (createdAt, id) order, and the last cursor later yields only new tasks.
func TestTaskPaginationReturnsEachTaskOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	type want struct {
		at time.Time
		id string
	}
	var all, open []want
	for i := range 23 {
		s := taskSpec{kind: "order_not_invoiceable", subject: fmt.Sprintf("P-%d", i), details: fmt.Sprintf(`{"orderNo":"P-%d"}`, i),
			created: t0.Add(time.Duration(i/5) * time.Millisecond)} // five tasks per instant: the id breaks the tie
		if i%3 == 0 {
			s.status = "resolved"
		}
		w := want{s.created, e.addTask(s)}
		all = append(all, w)
		if s.status != "resolved" {
			open = append(open, w)
		}
	}
	order := func(ws []want) []string {
		sort.Slice(ws, func(i, j int) bool {
			if !ws[i].at.Equal(ws[j].at) {
				return ws[i].at.Before(ws[j].at)
			}
			return ws[i].id < ws[j].id // the text of a UUID sorts as its bytes do
		})
		ids := make([]string, len(ws))
		for i, w := range ws {
			ids[i] = w.id
		}
		return ids
	}
	walk := func(filter string, limit int) ([]string, string) {
		var ids []string
		cursor := ""
		for pages := 0; ; pages++ {
			q := fmt.Sprintf("?limit=%d%s", limit, filter)
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			p, r := e.listTasks(q)
			if r.Status != 200 || p.NextCursor == nil {
				t.Fatalf("%s: %d %s", q, r.Status, r.Body)
			}
			if len(p.Data) > limit || p.HasMore && len(p.Data) != limit {
				t.Fatalf("%s: %d tasks, hasMore %v", q, len(p.Data), p.HasMore)
			}
			for _, task := range p.Data {
				ids = append(ids, task.ID)
			}
			cursor = *p.NextCursor
			if !p.HasMore || pages > 50 {
				return ids, cursor
			}
		}
	}
	tests := []struct {
		filter string
		limit  int
		want   []string
	}{
		{"", 4, order(all)},
		{"", 23, order(all)},
		{"", 1, order(all)},
		{"&status=open", 4, order(open)},
		{"&type=order_not_invoiceable&status=open", 5, order(open)},
	}
	for _, tt := range tests {
		got, _ := walk(tt.filter, tt.limit)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("walk %q by %d (-want +got):\n%s", tt.filter, tt.limit, diff)
		}
	}
	_, last := walk("", 4)
	late := e.addTask(taskSpec{kind: "order_not_invoiceable", subject: "LATE", details: `{"orderNo":"LATE"}`, created: time.Now()})
	if p, r := e.listTasks("?limit=4&cursor=" + url.QueryEscape(last)); r.Status != 200 || len(p.Data) != 1 || p.Data[0].ID != late || p.HasMore {
		t.Errorf("after the last page: %d %s, want only the late task", r.Status, r.Body)
	}
}

// TestTaskByIDAndProjectIsolation: a task is served by its id to its own
// project only; another project's task, an unknown id and a malformed id are
// 404 task_not_found. A resolved task shows when and how.
func TestTaskByIDAndProjectIsolation(t *testing.T) {
	t.Parallel()
	a := newEnv(t, nil)
	b := newEnv(t, nil)
	created := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Microsecond)
	note := "retried: handled"
	resolved := a.addTask(taskSpec{kind: "invoicing_failed", subject: "I-1", status: "resolved", resolution: &note,
		details: `{"orderNo":"I-1","error":"archive down","attempts":5}`, created: created})
	open := a.addTask(taskSpec{kind: "xrechnung_contact_phone_missing", subject: "I-2", details: `{"orderNo":"I-2"}`, created: created})

	r := a.c.Do("GET", "/v1/tasks/"+resolved, a.key, nil)
	if r.Status != 200 {
		t.Fatalf("own task: %d %s", r.Status, r.Body)
	}
	var body httpx.Envelope[query.Task]
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	at := created.Add(time.Hour).Format(time.RFC3339Nano)
	want := query.Task{ID: resolved, Type: "invoicing_failed", Status: "resolved", OrderNo: ptr("I-1"),
		CreatedAt: created.Format(time.RFC3339Nano), ResolvedAt: &at, Resolution: &note,
		Details: query.TaskDetails(`{"error":"archive down","orderNo":"I-1","attempts":5}`), HeldOrderSample: []string{}}
	if diff := cmp.Diff(want, body.Data); diff != "" {
		t.Errorf("resolved task (-want +got):\n%s", diff)
	}
	if p, _ := a.listTasks("?status=resolved"); len(p.Data) != 1 || !cmp.Equal(p.Data[0], body.Data) {
		t.Errorf("the listing shows the resolved task differently: %+v", p.Data)
	}
	r = a.c.Do("GET", "/v1/tasks/"+open, a.key, nil)
	if d := r.JSON(t)["data"].(map[string]any); r.Status != 200 || d["resolvedAt"] != nil || d["resolution"] != nil || d["status"] != "open" {
		t.Errorf("open task: %d %s", r.Status, r.Body)
	}

	for _, id := range []string{resolved, open, uuid.NewString(), "not-a-uuid", strings.ReplaceAll(open, "-", ""), "{" + open + "}", "%20"} {
		r := b.c.Do("GET", "/v1/tasks/"+id, b.key, nil)
		if code, _ := r.ErrorCode(t); r.Status != 404 || code != "task_not_found" {
			t.Errorf("GET /v1/tasks/%s with another project's key: %d %q, want 404 task_not_found", id, r.Status, code)
		}
	}
	if p, _ := b.listTasks(""); len(p.Data) != 0 {
		t.Errorf("another project's listing shows %+v", p.Data)
	}
	if p, _ := b.listTasks("?orderNo=I-1"); len(p.Data) != 0 {
		t.Errorf("another project's filtered listing shows %+v", p.Data)
	}
}

// TestOpenTasksMetric: after RegisterMetrics, Run counts the open tasks by
// type into o2i_tasks_open (resolved ones do not count).
func TestOpenTasksMetric(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	kind := "metric_test_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	for i := range 3 {
		e.addTask(taskSpec{kind: kind, subject: fmt.Sprintf("ORD-%d", i), created: time.Now()})
	}
	e.addTask(taskSpec{kind: kind, subject: "ORD-resolved", status: "resolved", created: time.Now()})
	q := query.New(e.pool, nil)
	reg := prometheus.NewRegistry()
	if err := q.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = q.Run(ctx) }()
	defer func() { cancel(); <-done }()
	open := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "o2i_tasks_open" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "type" && l.GetValue() == kind {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		return -1
	}
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("o2i_tasks_open{type=%q} = 3", kind), func() bool { return open() == 3 })
}
