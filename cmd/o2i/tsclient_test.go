package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestGeneratedTypeScriptClient: a client generated from the OpenAPI
// document sends the order, product and webhook calls successfully. The
// document's types are generated with openapi-typescript, the script
// testdata/tsclient/client.ts (openapi-fetch) is type-checked and compiled
// with tsc, which also checks what the types must refuse (a missing body,
// the webhook's body as a string), and run with Node against the service.
// `make tools` installs the pinned toolchain into .dev/tools (make test
// does); a missing toolchain fails the test.
func TestGeneratedTypeScriptClient(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no repository root above the package: %v", err)
	}
	modules := filepath.Join(root, ".dev", "tools", "node_modules")
	generate, tsc := filepath.Join(modules, ".bin", "openapi-typescript"), filepath.Join(modules, ".bin", "tsc")
	for _, tool := range []string{generate, tsc, filepath.Join(modules, "openapi-fetch", "package.json")} {
		if _, err := os.Stat(tool); err != nil {
			t.Fatalf("the generated client's toolchain is missing (%v): `make tools` installs it", err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("Node.js is required: %v", err)
	}

	// The script's directory: the document, the script, its tsconfig and
	// the toolchain's node_modules, where tsc and Node resolve openapi-fetch.
	dir := t.TempDir()
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"openapi.json": doc, "package.json": []byte(`{"private": true, "type": "module"}`)}
	for _, name := range []string{"client.ts", "tsconfig.json"} {
		if files[name], err = os.ReadFile(filepath.Join("testdata", "tsclient", name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	// Without --default-non-nullable false, openapi-typescript makes every
	// member with a default required, in request bodies too (currency,
	// requiresShipping of an order).
	run(generate, "openapi.json", "--default-non-nullable", "false", "-o", "api.d.ts")
	run(tsc, "-p", ".")

	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_generated_client"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	suffix := uuid.NewString()[:8]
	out := run(node, filepath.Join("dist", "client.js"), baseURL, key, pid, secret, suffix)
	var saw struct{ OrderNo, OrderID, Payment, EventID string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &saw); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if saw.OrderNo != "TS-"+suffix || saw.Payment != "paid" || saw.EventID != "evt_ts_"+suffix {
		t.Errorf("client saw %+v", saw)
	}
	// What the client did, read back through the checked client.
	st := client(t).Do("GET", "/v1/orders/TS-"+suffix, key, nil)
	if d, _ := st.JSON(t)["data"].(map[string]any); st.Status != 200 || d["payment"] != "paid" {
		t.Errorf("order after the generated client: %d %s", st.Status, st.Body)
	}
	p := client(t).Do("GET", "/v1/products?limit=100", key, nil)
	found := false
	for _, it := range p.JSON(t)["data"].([]any) {
		m := it.(map[string]any)
		rr, _ := m["revenueRecognition"].(map[string]any)
		found = found || m["productId"] == "ts-course-"+suffix && rr["mode"] == "immediate"
	}
	if !found {
		t.Errorf("product ts-course-%s recognising its revenue at once not listed: %s", suffix, p.Body)
	}
}
