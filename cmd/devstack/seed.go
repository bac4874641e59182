package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// devCredentials is the content of .dev/credentials.json.
type devCredentials struct {
	ProjectID string `json:"projectId"`
	APIKey    string `json:"apiKey"`
	BaseURL   string `json:"baseUrl"`
}

// sellerArgs are the `o2i project set` flags of the dev project.
var sellerArgs = []string{
	"--seller-name", "Muster Handel GmbH",
	"--seller-street", "Hauptstraße 1",
	"--seller-postal-code", "10115",
	"--seller-city", "Berlin",
	"--seller-country", "DE",
	"--seller-vat-id", "DE123456789",
	"--seller-tax-number", "30/123/45678",
	"--seller-iban", "DE02120300000000202051",
	"--seller-bic", "BYLADEM1001",
	"--contact-name", "Erika Mustermann",
	"--contact-phone", "+49 30 1234567",
	"--contact-email", "rechnung@example.com",
}

// seed applies the migrations and, once per database, creates the dev
// project and its API key with the service's admin CLI.
func seed(cfg *config, bin string) error {
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(cfg.root, bin)
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("service binary %s missing: run make build", cfg.rel(bin))
	}
	o2i := func(args ...string) ([]byte, error) { return runO2I(cfg, bin, args...) }

	if _, err := o2i("migrate"); err != nil {
		return err
	}
	credPath := cfg.path("credentials.json")
	if c, err := readCredentials(credPath); err == nil {
		logf("seed: dev project %s exists; API key in %s", c.ProjectID, cfg.rel(credPath))
		return seedOwner(o2i, c.ProjectID)
	}

	// A project id from an interrupted run is reused instead of creating another.
	partial := cfg.path("seed-project-id")
	projectID := ""
	if b, err := os.ReadFile(partial); err == nil {
		projectID = strings.TrimSpace(string(b))
	}
	if projectID == "" {
		out, err := o2i("project", "create", "--name", "Dev Shop", "--test-mode=true")
		if err != nil {
			return err
		}
		var p struct {
			ID string `json:"id"`
		}
		if err := decodeJSONOutput(out, &p); err != nil || p.ID == "" {
			return fmt.Errorf("o2i project create: no project id in output %q (%v)", strings.TrimSpace(string(out)), err)
		}
		projectID = p.ID
		if err := os.WriteFile(partial, []byte(projectID+"\n"), 0o600); err != nil {
			return err
		}
	}
	if _, err := o2i(append([]string{"project", "set", "--project", projectID}, sellerArgs...)...); err != nil {
		return err
	}
	out, err := o2i("key", "create", "--project", projectID, "--scopes", "orders:write,invoices:read", "--name", "dev")
	if err != nil {
		return err
	}
	// Only the secret is needed; other fields (id, prefix, scopes, expiresAt) are ignored.
	var k struct {
		Key string `json:"key"`
	}
	if err := decodeJSONOutput(out, &k); err != nil || k.Key == "" {
		return fmt.Errorf("o2i key create: no key in output (%v)", err)
	}
	c := devCredentials{ProjectID: projectID, APIKey: k.Key, BaseURL: "http://" + cfg.httpAddr}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(credPath, append(b, '\n'), 0o600); err != nil {
		return err
	}
	_ = os.Remove(partial)
	fmt.Printf("\nDev project %s (\"Dev Shop\", test mode) with API key (scopes orders:write,invoices:read):\n\n    %s\n\nShown once; also stored in %s (mode 0600).\n\n", projectID, k.Key, cfg.rel(credPath))
	return seedOwner(o2i, projectID)
}

// devOwner is the local owner of the dev project in the console.
const devOwner = "owner@example.com"

// seedOwner invites the dev project's local owner to the console (an
// e-mail lands in the SMTP sink) and prints how to sign in; once the owner
// has set a password, it prints the sign-in link instead.
func seedOwner(o2i func(args ...string) ([]byte, error), projectID string) error {
	out, err := o2i("user", "invite", "--project", projectID, "--email", devOwner, "--role", "owner", "--unless-member")
	if err != nil {
		return err
	}
	var inv struct {
		Link   string `json:"link"`
		Member bool   `json:"member"`
	}
	if err := decodeJSONOutput(out, &inv); err != nil || inv.Link == "" {
		return fmt.Errorf("o2i user invite: no link in output (%v)", err)
	}
	if inv.Member {
		fmt.Printf("\nConsole: sign in as %s at\n\n    %s\n\n", devOwner, inv.Link)
		return nil
	}
	fmt.Printf("\nConsole: open this one-time link (72 h; also in .dev/mail/) to set the password of %s, the dev project's owner:\n\n    %s\n\n", devOwner, inv.Link)
	return nil
}

func readCredentials(path string) (devCredentials, error) {
	var c devCredentials
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.ProjectID == "" || c.APIKey == "" {
		return c, errors.New("incomplete credentials")
	}
	return c, nil
}

// runO2I runs the service CLI with the stack's environment. Its stderr goes
// to ours; its stdout is returned (and echoed for commands without JSON).
func runO2I(cfg *config, bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = cfg.root
	cmd.Env = append(os.Environ(), environ(envVars(cfg))...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	name := "o2i " + strings.Join(args[:min(2, len(args))], " ")
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: timed out after 3m", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v%s", name, err, indent(stdout.String()))
	}
	if len(args) > 0 && args[0] == "migrate" && stdout.Len() > 0 {
		os.Stderr.Write(stdout.Bytes())
	}
	return stdout.Bytes(), nil
}

func indent(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// decodeJSONOutput decodes the first JSON object in a command's output,
// tolerating log lines before it.
func decodeJSONOutput(out []byte, v any) error {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return errors.New("no JSON object in output")
	}
	return json.NewDecoder(bytes.NewReader(out[i:])).Decode(v)
}
