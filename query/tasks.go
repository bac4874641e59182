package query

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/store"
)

// TaskStatuses are the values of the status filter of the task listing.
var TaskStatuses = []string{"open", "resolved"}

// MaxTaskListLimit is the most tasks ListTasks returns at once (the admin
// command's --limit); the HTTP listing pages by at most MaxLimit.
const MaxTaskListLimit = 1000

// taskType is the shape of a task type: the filter accepts any type so that
// new kinds need no change here; a type no task has matches nothing.
var taskType = regexp.MustCompile(`^[a-z][a-z0-9_]{0,99}$`)

// TaskFilter selects tasks of a project; each non-empty field is a condition.
type TaskFilter struct {
	Status  string // open or resolved
	Type    string // the task kind
	OrderNo string // details.orderNo, or an order a shared task holds or held (held_orders)
}

// Validate checks the filter values, naming the query parameter of a bad one.
func (f TaskFilter) Validate() error {
	if f.Status != "" && f.Status != "open" && f.Status != "resolved" {
		return apperr.Field("status", "status must be one of open, resolved, got %q", f.Status)
	}
	if f.Type != "" && !taskType.MatchString(f.Type) {
		return apperr.Field("type", "type must be a task type such as xrechnung_contact_phone_missing (lower-case letters, digits and _), got %q", f.Type)
	}
	return nil
}

// key is what a task listing cursor is bound to.
func (f TaskFilter) key() string {
	return strings.Join([]string{"tasks", f.Status, f.Type, f.OrderNo}, "\x00")
}

// listPos is a position in a listing ordered by (created_at, id), of
// tasks or products; the zero value is before every entry.
type listPos struct {
	at time.Time
	id uuid.UUID
}

type taskRow struct {
	Task
	pos listPos
}

func scanTask(row pgx.CollectableRow) (taskRow, error) {
	var r taskRow
	var id uuid.UUID
	var created time.Time
	var resolved *time.Time
	var details []byte
	if err := row.Scan(&id, &r.Type, &r.Status, &r.OrderNo, &created, &resolved, &r.Resolution, &details, &r.HeldOrders, &r.HeldOrderSample); err != nil {
		return r, err
	}
	r.ID = id.String()
	r.pos = listPos{at: created, id: id}
	r.CreatedAt = created.UTC().Format(time.RFC3339Nano)
	if resolved != nil {
		s := resolved.UTC().Format(time.RFC3339Nano)
		r.ResolvedAt = &s
	}
	r.Details = TaskDetails(details)
	if r.HeldOrderSample == nil {
		r.HeldOrderSample = []string{}
	}
	return r, nil
}

// taskColumns are a task's columns with what it holds back now: the count
// and a sample of its held orders (held_orders, longest held first).
const taskColumns = `id, kind, status, details->>'orderNo', created_at, resolved_at, resolution, details,
	(SELECT count(*) FROM held_orders h WHERE h.task_id = tasks.id AND h.released_at IS NULL),
	ARRAY(SELECT h.order_no FROM held_orders h WHERE h.task_id = tasks.id AND h.released_at IS NULL ORDER BY h.held_at, h.order_id LIMIT 10)`

// tasks returns up to limit tasks of the project matching f after position
// after, oldest first, and whether more follow (it fetches limit+1).
func (s *Service) tasks(ctx context.Context, projectID string, f TaskFilter, after listPos, limit int) ([]taskRow, bool, error) {
	// Only the filters given become conditions, so that each query shape
	// gets its own plan.
	sql := `SELECT ` + taskColumns + ` FROM tasks WHERE project_id = $1 AND (created_at, id) > ($2, $3::uuid)`
	args := []any{projectID, after.at, after.id.String()}
	for _, c := range []struct{ column, value string }{
		{"status", f.Status}, {"kind", f.Type},
	} {
		if c.value != "" {
			args = append(args, c.value)
			sql += " AND " + c.column + " = $" + strconv.Itoa(len(args))
		}
	}
	if f.OrderNo != "" {
		// The order's own tasks, and the shared tasks that hold or held it.
		args = append(args, f.OrderNo)
		n := "$" + strconv.Itoa(len(args))
		sql += " AND (details->>'orderNo' = " + n + " OR id IN (SELECT h.task_id FROM held_orders h WHERE h.project_id = $1 AND h.order_no = " + n + "))"
	}
	args = append(args, limit+1)
	sql += " ORDER BY created_at, id LIMIT $" + strconv.Itoa(len(args))
	rows, err := store.Query(ctx, s.pool, sql, args...)
	if err != nil {
		return nil, false, err
	}
	list, err := pgx.CollectRows(rows, scanTask)
	if err != nil {
		return nil, false, err
	}
	if len(list) > limit {
		return list[:limit], true, nil
	}
	return list, false, nil
}

// ListTasks returns the first limit (1 to MaxTaskListLimit) tasks of the
// project that match f, oldest first, and whether more match.
func (s *Service) ListTasks(ctx context.Context, projectID string, f TaskFilter, limit int) ([]Task, bool, error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, false, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	if err := f.Validate(); err != nil {
		return nil, false, err
	}
	if limit < 1 || limit > MaxTaskListLimit {
		return nil, false, apperr.Field("limit", "limit must be an integer from 1 to %d, got %d", MaxTaskListLimit, limit)
	}
	list, more, err := s.tasks(ctx, projectID, f, listPos{}, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]Task, 0, len(list))
	for _, r := range list {
		out = append(out, r.Task)
	}
	return out, more, nil
}

// Task returns one task of the project by its id; an unknown id, another
// project's task and a malformed id are all 404 task_not_found.
func (s *Service) Task(ctx context.Context, projectID, id string) (Task, error) {
	notFound := apperr.New(apperr.NotFound, "task_not_found", "no task %q", id)
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return Task{}, notFound
	}
	rows, err := store.Query(ctx, s.pool, `SELECT `+taskColumns+` FROM tasks WHERE project_id = $1 AND id = $2::uuid`, projectID, u.String())
	if err != nil {
		return Task{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanTask)
	if errors.Is(err, pgx.ErrNoRows) {
		return Task{}, notFound
	}
	return r.Task, err
}

// taskQuery is a validated query of GET /v1/tasks.
type taskQuery struct {
	TaskFilter
	limit  int
	cursor string
}

func parseTaskQuery(q map[string][]string) (taskQuery, error) {
	f := taskQuery{limit: DefaultLimit}
	values := map[string]*string{"cursor": &f.cursor, "status": &f.Status, "type": &f.Type, "orderNo": &f.OrderNo}
	var limit string
	values["limit"] = &limit
	for _, name := range []string{"limit", "cursor", "status", "type", "orderNo"} {
		switch v := q[name]; len(v) {
		case 0:
		case 1:
			*values[name] = v[0]
		default:
			return f, apperr.Field(name, "%s may be given once", name)
		}
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			return f, apperr.Field("limit", "limit must be an integer from 1 to %d, got %q", MaxLimit, limit)
		}
		f.limit = n
	}
	return f, f.Validate()
}

// PageTasks returns one page of up to limit (1 to MaxLimit) tasks of the
// project that match f, oldest first, after cursor ("" = from the start),
// the cursor of the next page and whether more match: the listing of
// GET /v1/tasks, for the console's page as well.
func (s *Service) PageTasks(ctx context.Context, projectID string, f TaskFilter, cursor string, limit int) ([]Task, string, bool, error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, "", false, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	if err := f.Validate(); err != nil {
		return nil, "", false, err
	}
	if limit < 1 || limit > MaxLimit {
		return nil, "", false, apperr.Field("limit", "limit must be an integer from 1 to %d, got %d", MaxLimit, limit)
	}
	key, err := s.cursors.get(ctx)
	if err != nil {
		return nil, "", false, err
	}
	var after listPos
	if cursor != "" {
		if after.at, after.id, err = decodeTimeIDCursor(key, projectID, f.key(), cursor); err != nil {
			return nil, "", false, err
		}
	}
	list, more, err := s.tasks(ctx, projectID, f, after, limit)
	if err != nil {
		return nil, "", false, err
	}
	out := make([]Task, 0, len(list))
	last := after
	for _, row := range list {
		out = append(out, row.Task)
		last = row.pos
	}
	return out, encodeTimeIDCursor(key, projectID, f.key(), last.at, last.id), more, nil
}

func (s *Service) listTasks(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f, err := parseTaskQuery(r.URL.Query())
	if err != nil {
		return err
	}
	list, next, more, err := s.PageTasks(ctx, httpx.ProjectID(ctx), f.TaskFilter, f.cursor, f.limit)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, r, http.StatusOK, TaskPage{Data: list, HasMore: more, NextCursor: &next, RequestID: httpx.RequestID(ctx)})
	return nil
}

func (s *Service) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := s.Task(r.Context(), httpx.ProjectID(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	httpx.WriteData(w, r, http.StatusOK, t)
	return nil
}
