import { describe, expect, it } from 'vitest';
import { decodeEntities, htmlTitle, htmlToText } from './html-text.js';

describe('htmlToText', () => {
  it('drops scripts, styles, comments and the head', () => {
    const html = `<html><head><title>T</title><style>p{color:red}</style></head>
      <body><!-- note --><script>alert("x")</script><p>Visible</p><noscript>js off</noscript></body></html>`;
    expect(htmlToText(html)).toBe('Visible');
  });

  it('puts blocks on their own lines and collapses whitespace', () => {
    const html = '<h1>Title</h1>\n\n<p>one   two\n three</p><ul><li>a</li><li>b</li></ul>x<br>y';
    expect(htmlToText(html)).toBe('Title\n\none two three\n\na\n\nb\n\nx\ny');
  });

  it('decodes entities after removing tags, so escaped markup stays text', () => {
    expect(htmlToText('<p>&lt;script&gt; &amp; &quot;q&quot; &#39;s&#x27; &eacute;&nbsp;x</p>')).toBe(
      '<script> & "q" \'s\' é x',
    );
  });

  it('keeps the line breaks and indentation of <pre>', () => {
    const html = '<p>Code:</p><pre><code>def f():\n    return 1 &lt; 2\n</code></pre><p>after</p>';
    expect(htmlToText(html)).toBe('Code:\n\ndef f():\n    return 1 < 2\n\nafter');
  });

  it('decodes Latin-1 named entities', () => {
    expect(htmlToText('<p>Caf&eacute; &Eacute;t&eacute; na&iuml;ve &frac12;</p>')).toBe('Café Été naïve ½');
  });

  it('drops a tag cut off at the end of a truncated page', () => {
    expect(htmlToText('<p>text</p><a href="http://exam')).toBe('text');
  });
});

describe('decodeEntities', () => {
  it('decodes numeric references, refusing surrogates and out-of-range code points', () => {
    expect(decodeEntities('&#128512; &#x1F600; &#xD800; &#9999999;')).toBe('😀 😀 \uFFFD \uFFFD');
  });
});

describe('htmlTitle', () => {
  it('returns the decoded title, or undefined when there is none', () => {
    expect(htmlTitle('<title> A &amp; B </title>')).toBe('A & B');
    expect(htmlTitle('<p>no title</p>')).toBeUndefined();
  });
});
