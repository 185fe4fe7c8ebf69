package pictures

import (
	"fmt"
	"strings"
)

// canvas accumulates SVG elements.
type canvas struct {
	b    strings.Builder
	w, h float64
}

func num(x float64) string {
	s := fmt.Sprintf("%.2f", x)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" || s == "" {
		return "0"
	}
	return s
}

func escape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")
	return r.Replace(s)
}

func (c *canvas) rect(x, y, w, h float64, fill, extra string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`+"\n",
		num(x), num(y), num(w), num(h), fill, extra)
}

func (c *canvas) text(x, y float64, size float64, anchor, fill, s string, extra string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" font-size="%s" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
		num(x), num(y), num(size), anchor, fill, extra, escape(s))
}

func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, width float64, extra string) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), stroke, num(width), extra)
}

// document wraps the body in an <svg> element with a white background.
func (c *canvas) document(title, defs string) []byte {
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`+"\n",
		num(c.w), num(c.h), num(c.w), num(c.h))
	fmt.Fprintf(&out, "<title>%s</title>\n", escape(title))
	if defs != "" {
		out.WriteString("<defs>\n" + defs + "</defs>\n")
	}
	fmt.Fprintf(&out, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(c.w), num(c.h))
	out.WriteString(c.b.String())
	out.WriteString("</svg>\n")
	return []byte(out.String())
}
