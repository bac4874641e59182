package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/testenv"
)

// paidByCredit places an order paid completely with store credit (invoiced
// at once) and returns its number.
func paidByCredit(t *testing.T, c *apitest.Client, key, orderNo string) {
	t.Helper()
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":4900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":4900,"externalRef":"ref-1"}],"grossTotalCents":4900}`, orderNo)),
		"Idempotency-Key", orderNo)
	if r.Status != http.StatusCreated {
		t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
	}
}

// waitingOrder places an order that waits for the provider's payment.
func waitingOrder(t *testing.T, c *apitest.Client, key, orderNo string) {
	t.Helper()
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":%q,"paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":4900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}}`, orderNo, "pi_"+orderNo)),
		"Idempotency-Key", orderNo)
	if r.Status != http.StatusCreated {
		t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
	}
}

// archivedNumber waits until the order's invoice is archived and returns its number.
func archivedNumber(t *testing.T, c *apitest.Client, key, orderNo string) string {
	t.Helper()
	d := waitStatus(t, c, key, orderNo, func(d map[string]any) bool {
		invs, _ := d["invoices"].([]any)
		return len(invs) == 1 && invs[0].(map[string]any)["status"] == "archived"
	})
	return d["invoices"].([]any)[0].(map[string]any)["number"].(string)
}

func setTestMode(t *testing.T, pid string, on bool) {
	t.Helper()
	if _, err := project.Apply(context.Background(), testenv.Pool(t), pid, project.Update{TestMode: &on}); err != nil {
		t.Fatal(err)
	}
}

// mixedYear is a project with two test invoices (archived in test mode),
// then two live invoices, and an order of each mode waiting for payment.
type mixedYear struct {
	pid, key, suffix string
	year             int
	test, live       []string // invoice numbers
	testOrders       []string
	liveOrders       []string
}

func newMixedYear(t *testing.T) mixedYear {
	t.Helper()
	pool := testenv.Pool(t)
	m := mixedYear{pid: testenv.Project(t, pool, true), suffix: uuid.NewString()[:8]}
	m.key = testenv.Key(t, pool, m.pid)
	c := client(t)
	for i := range 2 {
		no := fmt.Sprintf("T%d-%s", i, m.suffix)
		paidByCredit(t, c, m.key, no)
		m.test = append(m.test, archivedNumber(t, c, m.key, no))
		m.testOrders = append(m.testOrders, no)
	}
	waitingOrder(t, c, m.key, "TW-"+m.suffix)
	m.testOrders = append(m.testOrders, "TW-"+m.suffix)
	waitStatus(t, c, m.key, "TW-"+m.suffix, func(map[string]any) bool { return true })
	setTestMode(t, m.pid, false)
	for i := range 2 {
		no := fmt.Sprintf("L%d-%s", i, m.suffix)
		paidByCredit(t, c, m.key, no)
		m.live = append(m.live, archivedNumber(t, c, m.key, no))
		m.liveOrders = append(m.liveOrders, no)
	}
	waitingOrder(t, c, m.key, "LW-"+m.suffix)
	m.liveOrders = append(m.liveOrders, "LW-"+m.suffix)
	waitStatus(t, c, m.key, "LW-"+m.suffix, func(map[string]any) bool { return true })
	var issue time.Time
	if err := pool.QueryRow(context.Background(), `SELECT issue_date FROM invoices WHERE project_id = $1 AND number = $2`, m.pid, m.live[0]).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	m.year = issue.Year()
	for _, n := range m.test {
		if !strings.HasPrefix(n, "TEST-") {
			t.Fatalf("test invoice numbered %s", n)
		}
	}
	return m
}

// TestAuditorListsVerifiesAndExportsTheArchive: on a year with live and test
// documents, an archive:read key lists the live invoices page by page with
// their recorded objects and chain hashes, and downloads the export, whose
// index lists exactly the files it holds with their SHA-256 and size; the
// CLI export is the same ZIP; verify checks every object of both modes. The
// auditor's key reads nothing else, and no other key reads the archive.
func TestAuditorListsVerifiesAndExportsTheArchive(t *testing.T) {
	t.Parallel()
	m := newMixedYear(t)
	pool := testenv.Pool(t)
	c := client(t)
	auditor := testenv.Key(t, pool, m.pid, "archive:read")
	year := strconv.Itoa(m.year)

	// The listing: live invoices only, one per page, chained.
	var entries []map[string]any
	cursor := ""
	for page := 0; ; page++ {
		path := "/v1/archive?year=" + year + "&limit=1"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := c.Do("GET", path, auditor, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		body := r.JSON(t)
		for _, e := range body["data"].([]any) {
			entries = append(entries, e.(map[string]any))
		}
		cursor = body["nextCursor"].(string)
		if !body["hasMore"].(bool) {
			break
		}
		if page > 5 {
			t.Fatal("the listing does not end")
		}
	}
	if len(entries) != 2 || entries[0]["number"] != m.live[0] || entries[1]["number"] != m.live[1] {
		t.Fatalf("listing %v, want the live invoices %v", entries, m.live)
	}
	if entries[0]["previousManifestSha256"] != nil || entries[1]["previousManifestSha256"] != entries[0]["manifestSha256"] ||
		entries[1]["chainSeq"].(float64) != 2 {
		t.Errorf("chain: %v -> %v", entries[0], entries[1])
	}
	for _, e := range entries {
		objs := e["objects"].([]any)
		if len(objs) != 3 {
			t.Fatalf("objects of %s: %v", e["number"], objs)
		}
		for _, o := range objs {
			o := o.(map[string]any)
			var sha string
			var size int64
			if err := pool.QueryRow(context.Background(), `SELECT sha256, size FROM archive_objects WHERE invoice_id = $1 AND kind = $2`,
				e["invoiceId"], o["kind"]).Scan(&sha, &size); err != nil {
				t.Fatal(err)
			}
			if o["sha256"] != sha || int64(o["size"].(float64)) != size || o["versionId"] == "" ||
				o["retainUntil"] != fmt.Sprintf("%d-01-01T00:00:00Z", m.year+archive.RetentionYears+1) {
				t.Errorf("%s %s: %v, recorded %s %d", e["number"], o["kind"], o, sha, size)
			}
		}
	}
	for _, bad := range []string{"", "?year=26", "?year=abcd", "?year=2026&year=2027", "?year=" + year + "&limit=0"} {
		r := c.Do("GET", "/v1/archive"+bad, auditor, nil)
		want := "year"
		if strings.Contains(bad, "limit") {
			want = "limit"
		}
		if code, field := r.ErrorCode(t); r.Status != http.StatusUnprocessableEntity || code != "validation_failed" || field != want {
			t.Errorf("GET /v1/archive%s: %d %s %s, want 422 %s", bad, r.Status, code, field, want)
		}
	}

	// A cursor is bound to its year.
	first := c.Do("GET", "/v1/archive?year="+year+"&limit=1", auditor, nil).JSON(t)["nextCursor"].(string)
	r0 := c.Do("GET", fmt.Sprintf("/v1/archive?year=%d&cursor=%s", m.year+1, first), auditor, nil)
	if code, field := r0.ErrorCode(t); r0.Status != http.StatusUnprocessableEntity || code != "validation_failed" || field != "cursor" {
		t.Errorf("cursor of another year: %d %s %s", r0.Status, code, field)
	}

	// Scopes: the auditor reads the archive and nothing else; others not the archive.
	other := testenv.Key(t, pool, m.pid, "orders:write", "invoices:read")
	for _, probe := range []struct {
		path, key string
		want      int
	}{
		{"/v1/archive?year=" + year, other, http.StatusForbidden},
		{"/v1/archive/export?year=" + year, other, http.StatusForbidden},
		{"/v1/invoices", auditor, http.StatusForbidden},
		{"/v1/invoices/" + m.live[0] + "/pdf", auditor, http.StatusForbidden},
		{"/v1/orders/" + m.liveOrders[0], auditor, http.StatusForbidden},
		{"/v1/tasks", auditor, http.StatusForbidden},
	} {
		if r := c.Do("GET", probe.path, probe.key, nil); r.Status != probe.want {
			t.Errorf("GET %s: %d, want %d", probe.path, r.Status, probe.want)
		}
	}

	// The export: every live document and manifest, the index matching them.
	r := c.Do("GET", "/v1/archive/export?year="+year, auditor, nil)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("export: %d %s %.200s", r.Status, r.Header, r.Body)
	}
	checkExport(t, r.Body, m.live, m.test)

	out := filepath.Join(t.TempDir(), "export.zip")
	if res, err := runCmd(t, "archive", "export", "--project", m.pid, "--year", year, "--out", out, "--quiet"); err != nil {
		t.Fatalf("archive export: %v", err)
	} else if !strings.Contains(res, `"file"`) {
		t.Errorf("archive export printed %s", res)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, r.Body) {
		t.Errorf("the CLI's export (%d bytes) differs from the API's (%d bytes)", len(file), len(r.Body))
	}

	// verify: both modes, every object fine.
	res, err := runCmd(t, "archive", "verify", "--project", m.pid, "--year", year, "--quiet")
	if err != nil {
		t.Fatalf("archive verify: %v", err)
	}
	var rep struct {
		Checked, OK int
		Problems    []any
	}
	if err := json.Unmarshal([]byte(res), &rep); err != nil || rep.Checked != 12 || rep.OK != 12 || len(rep.Problems) != 0 {
		t.Errorf("verify: %s (%v), want 12 objects checked, all ok", res, err)
	}
	if _, err := runCmd(t, "archive", "verify", "--project", m.pid, "--year", "26"); err == nil {
		t.Error("verify --year 26 was accepted")
	}
}

// checkExport reads the ZIP: it holds the documents and manifests of the
// live invoices and no test document, index.csv lists exactly those files
// with their SHA-256 and size, and index.xml describes index.csv's columns.
func checkExport(t *testing.T, body []byte, live, test []string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("export is not a ZIP: %v", err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		files[f.Name] = b
	}
	var want []string
	for _, n := range live {
		want = append(want, "documents/"+n+".xml", "documents/"+n+".pdf", "manifests/"+n+".json")
	}
	want = append(want, "index.csv", "index.xml", "console-changes.jsonl")
	var got []string
	for name := range files {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("export holds %v, want %v", got, want)
	}
	for _, n := range test {
		if bytes.Contains(files["index.csv"], []byte(n)) {
			t.Errorf("the test invoice %s is in the export's index", n)
		}
	}
	cr := csv.NewReader(bytes.NewReader(files["index.csv"]))
	cr.Comma = ';'
	rows, err := cr.ReadAll()
	if err != nil || len(rows) != 1+3*len(live) {
		t.Fatalf("index.csv: %d rows (%v), want %d", len(rows), err, 1+3*len(live))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	listed := map[string]bool{}
	for _, row := range rows[1:] {
		name := row[col["Datei"]]
		data, ok := files[name]
		if !ok {
			t.Errorf("index.csv names %s, which the export does not hold", name)
			continue
		}
		listed[name] = true
		if archive.SHA256(data) != row[col["SHA256"]] || strconv.Itoa(len(data)) != row[col["Groesse"]] {
			t.Errorf("%s: index says %s / %s bytes, file has %s / %d", name, row[col["SHA256"]], row[col["Groesse"]], archive.SHA256(data), len(data))
		}
		if row[col["Dateiart"]] == "manifest" {
			if mf, err := archive.ParseManifest(data); err != nil || mf.Number != row[col["Rechnungsnummer"]] || archive.SHA256(data) != row[col["ManifestSHA256"]] {
				t.Errorf("%s: manifest %+v %v", name, mf, err)
			}
		}
	}
	if len(listed) != 3*len(live) {
		t.Errorf("index.csv lists %d files, want %d", len(listed), 3*len(live))
	}
	var idx struct {
		XMLName xml.Name `xml:"DataSet"`
		Version string   `xml:"Version"`
		Media   struct {
			Table struct {
				URL            string `xml:"URL"`
				VariableLength struct {
					ColumnDelimiter string `xml:"ColumnDelimiter"`
					Primary         []struct {
						Name string `xml:"Name"`
					} `xml:"VariablePrimaryKey"`
					Columns []struct {
						Name string `xml:"Name"`
					} `xml:"VariableColumn"`
				} `xml:"VariableLength"`
			} `xml:"Table"`
		} `xml:"Media"`
	}
	if err := xml.Unmarshal(files["index.xml"], &idx); err != nil {
		t.Fatalf("index.xml: %v", err)
	}
	tbl := idx.Media.Table
	var names []string
	for _, c := range append(tbl.VariableLength.Primary, tbl.VariableLength.Columns...) {
		names = append(names, c.Name)
	}
	if idx.Version != "1.0" || tbl.URL != "index.csv" || tbl.VariableLength.ColumnDelimiter != ";" || !slices.Equal(names, rows[0]) ||
		!bytes.Contains(files["index.xml"], []byte(`<!DOCTYPE DataSet SYSTEM "gdpdu-01-09-2004.dtd">`)) {
		t.Errorf("index.xml describes %s with columns %v, index.csv has %v", tbl.URL, names, rows[0])
	}
}

// TestResetTestDataKeepsLiveData: with live and test data in one project,
// the reset discards the test orders (invoiced or waiting), test invoices,
// their tasks, status records (PostgreSQL and Redis) and test archive
// objects, and restarts the TEST number range; every live order, invoice
// and archived object stays and verifies.
func TestResetTestDataKeepsLiveData(t *testing.T) {
	t.Parallel()
	m := newMixedYear(t)
	pool := testenv.Pool(t)
	rdb := testenv.Redis(t)
	c := client(t)
	ctx := context.Background()
	s3 := testenv.S3(t)
	testBucket := testenv.Env("O2I_S3_TEST_BUCKET")
	var testKeys []string
	rows, err := pool.Query(ctx, `SELECT o.object_key FROM archive_objects o JOIN invoices i ON i.id = o.invoice_id
		WHERE i.project_id = $1 AND i.test_mode AND o.bucket = $2`, m.pid, testBucket)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		testKeys = append(testKeys, k)
	}
	if rows.Close(); len(testKeys) != 6 {
		t.Fatalf("test documents in %s: %v, want 6 objects", testBucket, testKeys)
	}
	// A test document removed behind the service's back: verify names it
	// and exits with an error.
	var victim, victimVersion string
	if err := pool.QueryRow(ctx, `SELECT o.object_key, o.version_id FROM archive_objects o JOIN invoices i ON i.id = o.invoice_id
		WHERE i.project_id = $1 AND i.number = $2 AND o.kind = 'pdf'`, m.pid, m.test[1]).Scan(&victim, &victimVersion); err != nil {
		t.Fatal(err)
	}
	if err := s3.RemoveObject(ctx, testBucket, victim, minio.RemoveObjectOptions{VersionID: victimVersion}); err != nil {
		t.Fatal(err)
	}
	// The read side serves only what matches the record: the removed PDF is
	// an error, never another version or a fresh rendering.
	if r := c.Do("GET", "/v1/invoices/"+m.test[1]+"/pdf", m.key, nil); r.Status != http.StatusInternalServerError {
		t.Errorf("GET of the removed PDF: %d, want 500", r.Status)
	}
	// Missing: the PDF and the ZUGFeRD XML that lies only inside it.
	out, err := runCmd(t, "archive", "verify", "--project", m.pid, "--quiet")
	if err == nil || !strings.Contains(out, `"problem":"missing"`) || !strings.Contains(out, m.test[1]) || !strings.Contains(out, `"checked":12,"ok":10`) {
		t.Errorf("verify with a removed test PDF: %v\n%s", err, out)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject) VALUES ($1, $2, 'order_not_invoiceable', $3), ($4, $2, 'order_not_invoiceable', $5)`,
		uuid.New(), m.pid, m.testOrders[2], uuid.New(), m.liveOrders[2]); err != nil {
		t.Fatal(err)
	}

	out, err = runCmd(t, "project", "reset-test-data", "--project", m.pid)
	if err != nil {
		t.Fatalf("reset-test-data: %v", err)
	}
	var res struct {
		Orders, Invoices, Tasks int
		ArchiveObjects          int      `json:"archiveObjects"`
		Ranges                  []string `json:"numberRangesRestarted"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Orders != 3 || res.Invoices != 2 || res.Tasks != 1 || res.ArchiveObjects != 3 || len(res.Ranges) != 1 {
		t.Errorf("reset: %s (%v), want 3 orders, 2 invoices, 1 task, 3 objects (each document's PDF and manifest, less the removed PDF), 1 range", out, err)
	}
	for _, no := range m.testOrders {
		// The API processes drop their in-memory copy on the announcement.
		testenv.Eventually(t, 5*time.Second, "test order "+no+" gone", func() bool {
			return c.Do("GET", "/v1/orders/"+no, m.key, nil).Status == http.StatusNotFound
		})
		if n, err := rdb.Exists(ctx, readmodel.OrderKey(m.pid, no)).Result(); err != nil || n != 0 {
			t.Errorf("test order %s still in Redis (%v)", no, err)
		}
	}
	for _, n := range m.test {
		if r := c.Do("GET", "/v1/invoices/"+n, m.key, nil); r.Status != http.StatusNotFound {
			t.Errorf("test invoice %s after the reset: %d", n, r.Status)
		}
	}
	for _, k := range testKeys {
		if _, err := s3.StatObject(ctx, testBucket, k, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
			t.Errorf("test object %s after the reset: %v", k, err)
		}
	}
	var tasks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1`, m.pid).Scan(&tasks); err != nil || tasks != 1 {
		t.Errorf("tasks left: %d (%v), want the live order's 1", tasks, err)
	}
	// Live data: untouched and intact.
	for i, no := range m.liveOrders {
		r := c.Do("GET", "/v1/orders/"+no, m.key, nil)
		if r.Status != http.StatusOK {
			t.Errorf("live order %s after the reset: %d", no, r.Status)
		}
		if i < len(m.live) {
			if pdf := c.Do("GET", "/v1/invoices/"+m.live[i]+"/pdf", m.key, nil); pdf.Status != http.StatusOK {
				t.Errorf("live PDF %s after the reset: %d", m.live[i], pdf.Status)
			}
		}
	}
	res2, err := runCmd(t, "archive", "verify", "--project", m.pid, "--quiet")
	if err != nil || !strings.HasPrefix(res2, `{"checked":6,"ok":6,"problems":[]}`) {
		t.Errorf("verify after the reset: %s %v", res2, err)
	}
	// The TEST range's chain starts again too: its head (where the chain's
	// read of the documents to chain starts) goes with the range.
	var heads int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM archive_chain_heads WHERE project_id = $1 AND range_key = ANY($2)`, m.pid, res.Ranges).Scan(&heads); err != nil || heads != 0 {
		t.Errorf("chain heads of the restarted ranges: %d (%v), want none", heads, err)
	}
	// The TEST range starts again at 1; the discarded order's number and
	// Idempotency-Key are free again (a new order, not a replay).
	setTestMode(t, m.pid, true)
	no := m.testOrders[0]
	paidByCredit(t, c, m.key, no)
	if n := archivedNumber(t, c, m.key, no); n != m.test[0] {
		t.Errorf("first test invoice after the reset: %s, want %s again", n, m.test[0])
	}
	if _, err := runCmd(t, "project", "reset-test-data", "--project", uuid.NewString()); err == nil || !strings.Contains(err.Error(), "no project") {
		t.Errorf("reset of an unknown project: %v", err)
	}
}
