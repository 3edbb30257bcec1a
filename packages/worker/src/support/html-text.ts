/** Elements whose content is never readable text. */
const HIDDEN = ['script', 'style', 'noscript', 'template', 'svg', 'head', 'iframe', 'object'];
/** Elements that start a new line. */
const BLOCKS =
  'address|article|aside|blockquote|br|dd|div|dl|dt|fieldset|figcaption|figure|footer|form|h[1-6]|header|hr|li|main|nav|ol|p|pre|section|table|tbody|td|tfoot|th|thead|title|tr|ul';

/** Latin-1 entities, in code point order from 160 (nbsp) to 255 (yuml). */
const LATIN1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute ' +
  'micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig ' +
  'Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash ' +
  'Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ' +
  'ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc ' +
  'uuml yacute thorn yuml';

const NAMED_ENTITIES: Record<string, string> = {
  ...Object.fromEntries(LATIN1.split(' ').map((name, i) => [name, String.fromCodePoint(160 + i)])),
  nbsp: ' ',
  shy: '',
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  sbquo: '‚',
  ldquo: '“',
  rdquo: '”',
  bdquo: '„',
  bull: '•',
  euro: '€',
  dagger: '†',
  permil: '‰',
  larr: '←',
  rarr: '→',
  uarr: '↑',
  darr: '↓',
  minus: '−',
  ne: '≠',
  le: '≤',
  ge: '≥',
  infin: '∞',
  asymp: '≈',
  thinsp: ' ',
  ensp: ' ',
  emsp: ' ',
  zwj: '',
  zwnj: '',
};

/** The document's <title>, decoded, if it has one. */
export function htmlTitle(html: string): string | undefined {
  const match = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html);
  const title = match?.[1] === undefined ? '' : collapse(decodeEntities(match[1].replace(/<[^>]*>/g, '')));
  return title || undefined;
}

/**
 * Readable text of an HTML document: scripts, styles and comments dropped, tags removed,
 * entities decoded, whitespace collapsed, one line per block and a blank line between paragraphs.
 */
export function htmlToText(html: string): string {
  let text = html
    .replace(/\uE000/g, '')
    .replace(/<!--[\s\S]*?(-->|$)/g, ' ')
    .replace(/<!\[CDATA\[[\s\S]*?(\]\]>|$)/g, ' ');
  for (const tag of HIDDEN) {
    text = text.replace(new RegExp(`<${tag}\\b[\\s\\S]*?(<\\/${tag}\\s*>|$)`, 'gi'), ' ');
  }
  // <pre> keeps its line breaks and indentation: set aside, restored after collapsing.
  const preformatted: string[] = [];
  text = text.replace(/<pre\b[^>]*>([\s\S]*?)(<\/pre\s*>|$)/gi, (_whole, inner: string) => {
    preformatted.push(decodeEntities(stripTags(inner)).replace(/^\n|\s+$/g, ''));
    return `<div>\uE000${preformatted.length - 1}\uE000</div>`;
  });
  text = text.replace(/[ \t\r\n\f]+/g, ' '); // source line breaks are spaces in HTML
  text = stripTags(text.replace(new RegExp(`<\\/?(?:${BLOCKS})\\b[^>]*>`, 'gi'), '\n'));
  return collapse(decodeEntities(text)).replace(/\uE000(\d+)\uE000/g, (_w, i: string) => preformatted[Number(i)] ?? '');
}

function stripTags(html: string): string {
  // The second pattern drops a tag cut off at the end of a truncated page.
  return html.replace(/<[^>]*>/g, '').replace(/<!?[a-zA-Z/][^>]*$/, '');
}

/** Decodes numeric character references and the common named entities. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,7});/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' || ref[1] === 'X' ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : '\uFFFD';
    }
    return NAMED_ENTITIES[ref] ?? whole;
  });
}

function collapse(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
