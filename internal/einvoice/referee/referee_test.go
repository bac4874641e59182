package referee

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// official is the vendored validator, relative to this package's directory
// (the working directory of its tests).
const official = "official"

// TestVendoredChecksums checks every file listed in official/SHA256SUMS
// (sha256sum format) against its hash, and that the folder holds no file the
// list leaves out, so that a damaged or partial copy fails `make test`.
func TestVendoredChecksums(t *testing.T) {
	f, err := os.Open(filepath.Join(official, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != sha256.Size*2 {
			t.Errorf("SHA256SUMS:%d: malformed line %q", n, line)
			continue
		}
		name = filepath.Clean(strings.TrimPrefix(name, "./"))
		if listed[name] {
			t.Errorf("SHA256SUMS:%d: %s listed twice", n, name)
		}
		listed[name] = true
		got, err := hashFile(filepath.Join(official, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got != strings.ToLower(sum) {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", name, got, sum)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Fatal("SHA256SUMS lists no file")
	}
	err = filepath.WalkDir(official, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(official, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel != "SHA256SUMS" && !listed[rel] {
			t.Errorf("%s is not listed in SHA256SUMS", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestPathVendored checks that, without $O2I_VALIDATOR, Path finds the
// vendored script and that the script is executable (Run executes it
// directly).
func TestPathVendored(t *testing.T) {
	t.Setenv(EnvValidator, "")
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Abs(filepath.Join(official, "validate-einvoice"))
	if err != nil {
		t.Fatal(err)
	}
	if p != want {
		t.Errorf("Path() = %s, want %s", p, want)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable (%v)", p, fi.Mode())
	}
}
