package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/query"
)

// tasksCmd is `o2i tasks list`: a project's review tasks as a JSON array,
// oldest first, read with the same repository function as GET /v1/tasks.
func tasksCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(stderr, "usage: o2i tasks list --project ID [--status open|resolved] [--type T] [--order ORDERNO] [--limit N]\n")
		return errUsage
	}
	f := newAdminFlags("tasks list", cfg, stderr)
	id := f.String("project", "", "project id (required)")
	status := f.String("status", "", "open or resolved")
	typ := f.String("type", "", "task type, for example xrechnung_contact_phone_missing")
	order := f.String("order", "", "order number the task concerns")
	limit := f.Int("limit", 100, fmt.Sprintf("at most this many tasks, oldest first (1 to %d)", query.MaxTaskListLimit))
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *id == "" {
		fmt.Fprintln(stderr, "--project is required")
		return errUsage
	}
	filter := query.TaskFilter{Status: *status, Type: *typ, OrderNo: *order}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
		list, more, err := query.New(pool, nil).ListTasks(ctx, *id, filter, *limit)
		if err == nil && more {
			fmt.Fprintf(stderr, "more tasks match than --limit %d shows; raise --limit or narrow the filters\n", *limit)
		}
		return list, err
	})
}
