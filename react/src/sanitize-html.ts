/** Elements kept (with the allowed attributes): what a data frame's table and plain rich text are made of. */
const ELEMENTS: ReadonlySet<string> = new Set([
  "table",
  "caption",
  "colgroup",
  "col",
  "thead",
  "tbody",
  "tfoot",
  "tr",
  "th",
  "td",
  "div",
  "span",
  "p",
  "br",
  "hr",
  "b",
  "i",
  "u",
  "s",
  "strong",
  "em",
  "small",
  "sub",
  "sup",
  "code",
  "pre",
  "kbd",
  "samp",
  "var",
  "blockquote",
  "ul",
  "ol",
  "li",
  "dl",
  "dt",
  "dd",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
]);

/**
 * Elements removed with everything in them: code, styles, embedded documents, forms, foreign content (SVG and
 * MathML, where HTML parsing rules change) and anything that loads a resource. Any other unknown element is
 * replaced by its children (its text stays).
 */
const DROPPED: ReadonlySet<string> = new Set([
  "script",
  "style",
  "template",
  "noscript",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "link",
  "meta",
  "base",
  "img",
  "picture",
  "source",
  "video",
  "audio",
  "track",
  "svg",
  "math",
  "form",
  "input",
  "button",
  "select",
  "textarea",
  "option",
  "title",
  "head",
  "xmp",
  "plaintext",
  "noembed",
  "noframes",
  "portal",
]);

/** Attributes kept: table structure and class names, none that runs code, styles or loads a resource. */
const ATTRIBUTES: ReadonlySet<string> = new Set([
  "class",
  "colspan",
  "rowspan",
  "span",
  "scope",
  "headers",
  "align",
  "valign",
  "border",
  "title",
]);

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

/** Keeps `node`'s allowed content, in place. */
function clean(node: Node): void {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === TEXT_NODE) continue;
    if (child.nodeType !== ELEMENT_NODE) {
      // comments, processing instructions, CDATA
      child.remove();
      continue;
    }
    const element = child as Element;
    const name = element.localName.toLowerCase();
    if (element.namespaceURI !== "http://www.w3.org/1999/xhtml" || DROPPED.has(name)) {
      element.remove();
      continue;
    }
    clean(element);
    if (!ELEMENTS.has(name)) {
      element.replaceWith(...element.childNodes);
      continue;
    }
    for (const attribute of [...element.attributes]) {
      if (!ATTRIBUTES.has(attribute.name.toLowerCase())) element.removeAttribute(attribute.name);
    }
  }
}

/**
 * HTML that code displayed (a pandas data frame's table, `display(HTML(...))`), made safe to put in the page: parsed
 * into an inert document (`DOMParser`: nothing in it runs or loads) and rebuilt from an allow-list — tables and plain
 * rich text with their structural attributes. Scripts, styles, event handlers, links and `javascript:` URLs, images
 * and every other external load, embedded documents, forms, SVG and MathML are removed; an element off the list
 * gives way to its text. Returns `undefined` where there is no `DOMParser` (server rendering): show the text
 * representation then.
 * @example
 * sanitizeHtml('<table onclick="x()"><tr><td>1<script>steal()</script></td></tr></table>')
 * // '<table><tbody><tr><td>1</td></tr></tbody></table>'
 */
export function sanitizeHtml(html: string): string | undefined {
  if (typeof DOMParser === "undefined") return undefined;
  const document = new DOMParser().parseFromString(`<!doctype html><body>${html}`, "text/html");
  clean(document.body);
  return document.body.innerHTML;
}
