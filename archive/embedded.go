package archive

import (
	"bytes"
	"fmt"
	"io"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// EmbeddedXMLName is the file a ZUGFeRD PDF/A-3 embeds its XML as.
const EmbeddedXMLName = "factur-x.xml"

// Embedded describes the XML embedded in the archived PDF pdf: its anchor
// names the PDF's object (key, version id, retention) with the SHA-256 and
// size of the embedded file, which are xml's. A PDF in a document batch:
// the PDF's anchor says where it lies in the object, the XML's is inside it.
func Embedded(pdf Stored, xml []byte) Stored {
	st := pdf
	st.SHA256, st.Size = SHA256(xml), int64(len(xml))
	st.InBatch, st.Offset = false, 0
	return st
}

// EmbeddedXML returns the XML file embedded in pdf (EmbeddedXMLName),
// byte for byte.
func EmbeddedXML(pdf []byte) ([]byte, error) {
	conf := &model.Configuration{Reader15: true, ValidationMode: model.ValidationRelaxed, Eol: types.EolLF,
		Limits: model.DefaultResourceLimits(), Cmd: model.EXTRACTATTACHMENTS}
	ctx, err := api.ReadAndValidate(bytes.NewReader(pdf), conf)
	if err != nil {
		return nil, fmt.Errorf("archive: read the PDF: %w", err)
	}
	aa, err := ctx.ExtractAttachments([]string{EmbeddedXMLName})
	if err != nil {
		return nil, fmt.Errorf("archive: the PDF's embedded files: %w", err)
	}
	if len(aa) != 1 {
		return nil, fmt.Errorf("%w: the PDF embeds no %s", ErrCorrupt, EmbeddedXMLName)
	}
	return io.ReadAll(aa[0])
}

// VerifiedEmbedded returns the XML embedded in pdf when its SHA-256 and
// size are the ones want records (the anchor of an embedded XML); ErrCorrupt
// when not.
func VerifiedEmbedded(pdf []byte, want Stored) ([]byte, error) {
	xml, err := EmbeddedXML(pdf)
	if err != nil {
		return nil, err
	}
	if SHA256(xml) != want.SHA256 || int64(len(xml)) != want.Size {
		return nil, fmt.Errorf("%w: the XML embedded in %s version %q", ErrCorrupt, want.Key, want.VersionID)
	}
	return xml, nil
}
