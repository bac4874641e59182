package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// ManifestFormat names the manifest layout; a reader refuses others.
// ManifestFormatEmbedded is the same layout with an XML entry embedded in
// the PDF (ManifestObject.EmbeddedIn): a reader of the first format alone
// would look for that XML as an object of its own. ManifestFormatBatched
// is the second layout with an entry that is a part of its object (the PDF
// in a document batch, ManifestObject.Offset): a reader of the others would
// read the whole object as the document.
const (
	ManifestFormat         = "o2i-archive-manifest/1"
	ManifestFormatEmbedded = "o2i-archive-manifest/2"
	ManifestFormatBatched  = "o2i-archive-manifest/3"
)

// Manifest is the record archived beside an invoice's documents: what was
// archived (each object's key, version id, SHA-256, size, retain-until) and
// the SHA-256 of the previous manifest of the same project and number range.
// The manifests of a number range thus form a hash chain: removing,
// replacing or changing a document or a manifest, or leaving one out,
// breaks it.
type Manifest struct {
	Format                 string           `json:"format"`
	ProjectID              string           `json:"projectId"`
	NumberRange            string           `json:"numberRange"`
	ChainSeq               int64            `json:"chainSeq"` // 1 for the first manifest of the range
	InvoiceID              string           `json:"invoiceId"`
	Number                 string           `json:"number"`
	IssueDate              string           `json:"issueDate"` // YYYY-MM-DD
	Type                   string           `json:"type"`
	TestMode               bool             `json:"testMode"`
	Objects                []ManifestObject `json:"objects"`
	PreviousManifestSHA256 string           `json:"previousManifestSha256"` // "" for the first of the range
}

// ManifestObject is one archived document in a manifest.
type ManifestObject struct {
	Kind        string  `json:"kind"` // xml or pdf
	Key         string  `json:"key"`
	VersionID   string  `json:"versionId"`
	SHA256      string  `json:"sha256"`
	Size        int64   `json:"size"`
	RetainUntil *string `json:"retainUntil"` // RFC 3339; null without retention (test documents)
	// EmbeddedIn "pdf": the XML is the file EmbeddedXMLName inside the
	// document's PDF/A-3; Key, VersionID and RetainUntil are the PDF
	// object's, SHA256 and Size the embedded file's.
	EmbeddedIn string `json:"embeddedIn,omitempty"`
	// Offset set: the document is the Size bytes from Offset of the object
	// Key and VersionID name (a document batch); SHA256 is theirs.
	Offset *int64 `json:"offset,omitempty"`
}

// Object describes st as a manifest entry of the kind.
func Object(kind string, st Stored) ManifestObject {
	o := ManifestObject{Kind: kind, Key: st.Key, VersionID: st.VersionID, SHA256: st.SHA256, Size: st.Size}
	if st.InBatch {
		off := st.Offset
		o.Offset = &off
	}
	if !st.RetainUntil.IsZero() {
		s := st.RetainUntil.UTC().Format(time.RFC3339)
		o.RetainUntil = &s
	}
	return o
}

// EmbeddedObject describes the XML embedded in the PDF (st from Embedded)
// as a manifest entry.
func EmbeddedObject(st Stored) ManifestObject {
	o := Object("xml", st)
	o.EmbeddedIn = "pdf"
	return o
}

// Encode returns the manifest's bytes (the same value always gives the same
// bytes) and their hex SHA-256, the chain hash.
func (m Manifest) Encode() ([]byte, string, error) {
	m.Format = ManifestFormat
	for _, o := range m.Objects {
		if o.EmbeddedIn != "" && m.Format == ManifestFormat {
			m.Format = ManifestFormatEmbedded
		}
		if o.Offset != nil {
			m.Format = ManifestFormatBatched
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, "", err
	}
	b = append(b, '\n')
	return b, SHA256(b), nil
}

// ParseManifest reads a manifest.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("archive: manifest: %w", err)
	}
	switch m.Format {
	case ManifestFormat, ManifestFormatEmbedded, ManifestFormatBatched:
	default:
		return m, fmt.Errorf("archive: manifest format %q, want %q, %q or %q", m.Format, ManifestFormat, ManifestFormatEmbedded, ManifestFormatBatched)
	}
	return m, nil
}

// SHA256 is the hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
