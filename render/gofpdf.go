package render

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/johnfercher/maroto/v2/pkg/core"
	"github.com/phpdave11/gofpdf"
)

// maroto draws with gofpdf, which parses each TrueType file (400 KB) again
// for every document, names the parsed font by JSON-encoding it (65536
// widths) and subsets and compresses it when writing: two thirds of the time
// of a PDF. maroto offers no way to pass parsed fonts, so this file reaches
// into the two libraries (versions pinned in go.mod) by reflection:
//
//   - gofpdf parses the fonts once (libFonts), so the layout measures text
//     with exactly the widths it always had;
//   - maroto is configured without custom fonts, and each document's gofpdf
//     instance gets a copy of the parsed definitions, with its own set of
//     used characters (attachFonts);
//   - when gofpdf closes the document, the fonts are declared core fonts,
//     for which it writes a small placeholder dictionary instead of a subset;
//     toPDFA3 replaces each placeholder with the subset of font.go.
//
// After a library upgrade that changes any of this, libFonts or attachFonts
// returns an error (and PDF fails) rather than writing a wrong document.

// libFont is one of the two fonts: gofpdf's parsed definition and the
// font program for the subsets.
type libFont struct {
	key   string        // gofpdf's font key: family in lower case, then style
	def   reflect.Value // gofpdf's font definition (an unexported struct)
	desc  gofpdf.FontDescType
	prog  *ttf
	fixed [fixedSubsets]func() *embeddedFont // by tiers, built once when first used (font.go)
}

// errLibrary wraps every mismatch with the libraries' internals.
var errLibrary = errors.New("the layout library's internals are not as this package expects")

// libFonts parses the fonts once, with gofpdf for the layout and with
// parseTTF for the subsets, and checks that both agree on every width.
var libFonts = sync.OnceValues(func() ([]*libFont, error) {
	pdf := gofpdf.New("P", "mm", "A4", "")
	styles := []struct {
		style string
		data  []byte
	}{{"", fontRegular}, {"B", fontBold}}
	for _, s := range styles {
		// A copy: gofpdf writes into the bytes when it subsets.
		pdf.AddUTF8FontFromBytes(fontFamily, s.style, bytes.Clone(s.data))
	}
	if err := pdf.Error(); err != nil {
		return nil, fmt.Errorf("parse fonts: %w", err)
	}
	fonts, err := fontMap(pdf)
	if err != nil {
		return nil, err
	}
	if err := checkFontDef(fonts.Type()); err != nil {
		return nil, err
	}
	var out []*libFont
	for n, s := range styles {
		key := strings.ToLower(fontFamily) + s.style
		d := fonts.MapIndex(reflect.ValueOf(key))
		if !d.IsValid() {
			return nil, fmt.Errorf("%w: no font %q after adding it", errLibrary, key)
		}
		f := &libFont{key: key, def: reflect.New(d.Type()).Elem()}
		f.def.Set(d)
		// Not shared: gofpdf's parsed file is only used by its own subsetter.
		if err := setField(f.def, "utf8File", reflect.Zero(f.def.FieldByName("utf8File").Type())); err != nil {
			return nil, err
		}
		// The resource name (/F1, /F2) instead of a 40-digit digest: gofpdf
		// writes it into the page content every time maroto selects a font.
		if err := setField(f.def, "i", reflect.ValueOf(strconv.Itoa(n+1))); err != nil {
			return nil, err
		}
		f.desc = f.def.FieldByName("Desc").Interface().(gofpdf.FontDescType)
		if f.prog, err = parseTTF(s.data); err != nil {
			return nil, fmt.Errorf("font %s: %w", key, err)
		}
		for tiers := range f.fixed {
			f.fixed[tiers] = sync.OnceValue(func() *embeddedFont {
				return newEmbeddedFont(f.prog, fixedRunes(f.prog, tiers), compressBest)
			})
		}
		cw := f.def.FieldByName("Cw").Interface().([]int)
		for c := 1; c < len(cw) && c < len(f.prog.glyph); c++ {
			w := cw[c]
			if w == 65535 { // gofpdf's mark for a glyph of zero width
				w = 0
			}
			if w != f.prog.width(rune(c)) {
				return nil, fmt.Errorf("font %s: width of U+%04X is %d for the layout, %d in the font program",
					key, c, w, f.prog.width(rune(c)))
			}
		}
		out = append(out, f)
	}
	return out, nil
})

// fontMap returns gofpdf's fonts (a map[string]fontDefType), writable.
func fontMap(pdf *gofpdf.Fpdf) (reflect.Value, error) {
	return field(reflect.ValueOf(pdf).Elem(), "fonts")
}

// checkFontDef checks that gofpdf's font map has the fields this file uses.
func checkFontDef(t reflect.Type) error {
	if t.Kind() != reflect.Map || t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%w: gofpdf fonts is a %s", errLibrary, t)
	}
	for name, want := range map[string]reflect.Type{
		"Tp":        reflect.TypeFor[string](),
		"Desc":      reflect.TypeFor[gofpdf.FontDescType](),
		"Cw":        reflect.TypeFor[[]int](),
		"N":         reflect.TypeFor[int](),
		"i":         reflect.TypeFor[string](),
		"usedRunes": reflect.TypeFor[map[int]int](),
	} {
		if f, ok := t.Elem().FieldByName(name); !ok || f.Type != want {
			return fmt.Errorf("%w: gofpdf font definition has no %s %s", errLibrary, name, want)
		}
	}
	if f, ok := t.Elem().FieldByName("utf8File"); !ok || f.Type.Kind() != reflect.Pointer {
		return fmt.Errorf("%w: gofpdf font definition has no utf8File pointer", errLibrary)
	}
	return nil
}

// field returns the field name of the addressable struct v, writable even
// if it is unexported.
func field(v reflect.Value, name string) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("%w: %s has no field %s", errLibrary, v.Type(), name)
	}
	return reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem(), nil
}

func setField(v reflect.Value, name string, x reflect.Value) error {
	f, err := field(v, name)
	if err != nil {
		return err
	}
	f.Set(x)
	return nil
}

// fontUse is one document's use of one font: the characters gofpdf
// recorded while drawing, and the object number of its placeholder.
type fontUse struct {
	font  *libFont
	runes map[int]int // gofpdf's usedRunes: code point -> code point
	obj   int
}

// docFonts are the fonts of one document being laid out.
type docFonts struct {
	fonts reflect.Value // the document's gofpdf font map
	uses  []*fontUse
}

// attachFonts gives the gofpdf instance of m (fresh from maroto.New, built
// without custom fonts) the parsed fonts, and maroto's font a fontSelector
// if fontOnChange. date replaces the clock in gofpdf's information
// dictionary, which toPDFA3 replaces anyway.
func attachFonts(m core.Maroto, date time.Time, fontOnChange bool) (*docFonts, error) {
	lib, err := libFonts()
	if err != nil {
		return nil, err
	}
	pdf, err := gofpdfOf(m)
	if err != nil {
		return nil, err
	}
	// maroto selected its default font before there was one.
	if err := pdf.Error(); err != nil && !strings.HasPrefix(err.Error(), "undefined font") {
		return nil, err
	}
	pdf.ClearError()
	if fontOnChange {
		if err := selectFontsOnChange(m, pdf); err != nil {
			return nil, err
		}
	}
	fonts, err := fontMap(pdf)
	if err != nil {
		return nil, err
	}
	d := &docFonts{fonts: fonts}
	for _, f := range lib {
		u := &fontUse{font: f, runes: map[int]int{}}
		def := reflect.New(f.def.Type()).Elem()
		def.Set(f.def)
		if err := setField(def, "usedRunes", reflect.ValueOf(u.runes)); err != nil {
			return nil, err
		}
		fonts.SetMapIndex(reflect.ValueOf(f.key), def)
		d.uses = append(d.uses, u)
	}
	// Called once, when gofpdf closes the last page and before it writes the
	// fonts; maroto sets no footer function of gofpdf's.
	pdf.SetFooterFuncLpi(func(last bool) {
		if last {
			d.toPlaceholders()
		}
	})
	// Sorted fonts: the same object numbers for the same document.
	pdf.SetCatalogSort(true)
	pdf.SetCreationDate(date)
	pdf.SetModificationDate(date)
	return d, nil
}

// toPlaceholders declares the fonts core fonts, so that gofpdf writes a
// placeholder dictionary for each instead of subsetting the font.
func (d *docFonts) toPlaceholders() {
	for _, u := range d.uses {
		key := reflect.ValueOf(u.font.key)
		def := reflect.New(d.fonts.Type().Elem()).Elem()
		def.Set(d.fonts.MapIndex(key))
		def.FieldByName("Tp").SetString("Core")
		d.fonts.SetMapIndex(key, def)
	}
}

// written returns the fonts with their placeholders' object numbers, after
// gofpdf has written the document.
func (d *docFonts) written() ([]*fontUse, error) {
	for _, u := range d.uses {
		def := d.fonts.MapIndex(reflect.ValueOf(u.font.key))
		if !def.IsValid() || def.FieldByName("Tp").String() != "Core" || def.FieldByName("N").Int() <= 0 {
			return nil, fmt.Errorf("%w: font %s was not written as a placeholder", errLibrary, u.font.key)
		}
		u.obj = int(def.FieldByName("N").Int())
	}
	return d.uses, nil
}

// gofpdfOf returns the gofpdf instance that maroto's m draws with.
func gofpdfOf(m core.Maroto) (*gofpdf.Fpdf, error) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: maroto is a %T", errLibrary, m)
	}
	p := v.Elem().FieldByName("provider")
	if p.Kind() != reflect.Interface || p.IsNil() || p.Elem().Kind() != reflect.Pointer || p.Elem().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: no maroto provider", errLibrary)
	}
	f := p.Elem().Elem().FieldByName("fpdf")
	if f.Kind() != reflect.Interface || f.IsNil() || f.Elem().Type() != reflect.TypeFor[*gofpdf.Fpdf]() {
		return nil, fmt.Errorf("%w: maroto's provider does not draw with a *gofpdf.Fpdf", errLibrary)
	}
	return (*gofpdf.Fpdf)(f.Elem().UnsafePointer()), nil
}

// maroto's font selects the font again for every measurement and every
// text, and gofpdf writes each selection into the page ("BT /F1 9.00 Tf
// ET", formatted with fmt): a fifth of a PDF's time, most of it selecting
// the font already selected. fontSelector is the gofpdf instance as
// maroto's font sees it, passing a selection on only when it changes
// gofpdf's font (family, style or size). gofpdf keeps its font across
// pages (it selects it again on each new page itself) and never inside a
// saved graphics state, so the pages show exactly what they showed.
type fontSelector struct {
	*gofpdf.Fpdf
	at *gofpdfFontState
}

// gofpdfFontState are the offsets of gofpdf's current font in its struct.
type gofpdfFontState struct {
	family, style, size, underline, strikeout, err uintptr
}

var fontState = sync.OnceValues(func() (*gofpdfFontState, error) {
	t := reflect.TypeFor[gofpdf.Fpdf]()
	var st gofpdfFontState
	for _, f := range []struct {
		name string
		typ  reflect.Type
		off  *uintptr
	}{
		{"fontFamily", reflect.TypeFor[string](), &st.family},
		{"fontStyle", reflect.TypeFor[string](), &st.style},
		{"fontSizePt", reflect.TypeFor[float64](), &st.size},
		{"underline", reflect.TypeFor[bool](), &st.underline},
		{"strikeout", reflect.TypeFor[bool](), &st.strikeout},
		{"err", reflect.TypeFor[error](), &st.err},
	} {
		sf, ok := t.FieldByName(f.name)
		if !ok || sf.Type != f.typ || len(sf.Index) != 1 {
			return nil, fmt.Errorf("%w: gofpdf has no %s %s", errLibrary, f.name, f.typ)
		}
		*f.off = sf.Offset
	}
	return &st, nil
})

// SetFont selects the font unless it is gofpdf's current one. maroto
// passes the family as configured (no spaces) and the style as "", "B",
// "I" or "BI"; anything else goes to gofpdf as it is.
func (s fontSelector) SetFont(family, style string, size float64) {
	p := unsafe.Pointer(s.Fpdf)
	if size > 0 && *(*error)(unsafe.Add(p, s.at.err)) == nil &&
		!*(*bool)(unsafe.Add(p, s.at.underline)) && !*(*bool)(unsafe.Add(p, s.at.strikeout)) &&
		*(*float64)(unsafe.Add(p, s.at.size)) == size &&
		*(*string)(unsafe.Add(p, s.at.style)) == style && (style == "" || style == "B" || style == "I" || style == "BI") &&
		strings.EqualFold(*(*string)(unsafe.Add(p, s.at.family)), family) && !strings.ContainsAny(family, " ") {
		return
	}
	s.Fpdf.SetFont(family, style, size)
}

// selectFontsOnChange gives maroto's font (of m, drawing with pdf) a
// fontSelector instead of pdf.
func selectFontsOnChange(m core.Maroto, pdf *gofpdf.Fpdf) error {
	st, err := fontState()
	if err != nil {
		return err
	}
	p := reflect.ValueOf(m).Elem().FieldByName("provider")
	if p.Kind() != reflect.Interface || p.IsNil() || p.Elem().Kind() != reflect.Pointer {
		return fmt.Errorf("%w: no maroto provider", errLibrary)
	}
	f := p.Elem().Elem().FieldByName("font")
	if f.Kind() != reflect.Interface || f.IsNil() || f.Elem().Kind() != reflect.Pointer || f.Elem().Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%w: maroto's provider has no font", errLibrary)
	}
	fp, err := field(f.Elem().Elem(), "pdf")
	if err != nil {
		return err
	}
	sel := reflect.ValueOf(fontSelector{pdf, st})
	if fp.Kind() != reflect.Interface || fp.IsNil() || fp.Elem().UnsafePointer() != unsafe.Pointer(pdf) || !sel.Type().Implements(fp.Type()) {
		return fmt.Errorf("%w: maroto's font does not draw with the document's gofpdf", errLibrary)
	}
	fp.Set(sel)
	return nil
}
