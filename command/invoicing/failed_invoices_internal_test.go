package invoicing

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
)

// TestFailedDocuments: which documents count as failed when an event's last
// try ended with an error.
func TestFailedDocuments(t *testing.T) {
	t.Parallel()
	outage := errors.New("dial tcp: connection refused")
	archiving := func(id string, err error) error {
		return &archiveError{invoiceID: id, err: fmt.Errorf("archive invoice %s: %w", id, err)}
	}
	tests := []struct {
		name string
		err  error
		want []docFailure
	}{
		{"success", nil, nil},
		{"failure before a number is taken (a hold, the database)", fmt.Errorf("issue invoices of order o: %w", outage), nil},
		{"engine refuses the order", &invalidDocument{kind: "invoice", rules: []string{"BR-CO-26"}}, nil},
		{"one document's archiving", archiving("a", outage), []docFailure{{"a", "archive invoice a: " + outage.Error()}}},
		{"its rendering", archiving("a", errors.New("render PDF: bad XML")), []docFailure{{"a", "archive invoice a: render PDF: bad XML"}}},
		{"wrapped by the operation", func() (err error) {
			err = archiving("a", outage)
			apperr.Wrap(&err, "invoice order %s", "o")
			return err
		}(), []docFailure{{"a", "archive invoice a: " + outage.Error()}}},
		{"two of an order's documents", errors.Join(archiving("a", outage), archiving("b", context.DeadlineExceeded)),
			[]docFailure{{"a", "archive invoice a: " + outage.Error()}, {"b", "archive invoice b: " + context.DeadlineExceeded.Error()}}},
		{"a conflict in the archive (permanent)", archiving("a", archive.ErrConflict), []docFailure{{"a", "archive invoice a: " + archive.ErrConflict.Error()}}},
		{"the same document twice", errors.Join(archiving("a", outage), fmt.Errorf("retry: %w", archiving("a", outage))),
			[]docFailure{{"a", "archive invoice a: " + outage.Error()}}},
		{"a document's archiving and another failure", errors.Join(outage, archiving("b", outage)), []docFailure{{"b", "archive invoice b: " + outage.Error()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, failedDocuments(tt.err), cmp.AllowUnexported(docFailure{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAwaitsArchive: which documents archiving (the invoicer's tries, the
// reconciler's retry) still has to do.
func TestAwaitsArchive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      string
		failedRules []string
		want        bool
	}{
		{"created", "created", nil, true},
		{"failed in archiving: retried", "failed", nil, true},
		{"failed in archiving, empty rules", "failed", []string{}, true},
		{"broke rules (earlier versions): never", "failed", []string{"BR-CO-26"}, false},
		{"archived", "archived", nil, false},
		{"unknown status", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := awaitsArchive(tt.status, tt.failedRules); got != tt.want {
				t.Errorf("awaitsArchive(%q, %v) = %v, want %v", tt.status, tt.failedRules, got, tt.want)
			}
		})
	}
}
