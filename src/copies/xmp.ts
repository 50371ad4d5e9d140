/** IPTC's term for media made by a trained model: what Google Merchant Center asks AI-made product images to carry. */
export const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const IPTC_EXT = 'http://iptc.org/std/Iptc4xmpExt/2008-02-29/';
const GENBATCH_NS = 'https://github.com/genbatch/genbatch/ns/1.0/';

/** What a copy says of where it came from. */
export interface MarkFacts {
  model: string;
  jobId: string;
  itemId: string;
}

const escapeXml = (text: string) =>
  text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/**
 * The XMP packet that marks a copy as AI-made (EU AI Act Art. 50's
 * machine-readable marking; Merchant Center's DigitalSourceType), with the
 * model (also as IPTC's AI System Used), the job and the item.
 */
export function aiMarkXmp(facts: MarkFacts): string {
  const { model, jobId, itemId } = facts;
  return [
    '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>',
    '<x:xmpmeta xmlns:x="adobe:ns:meta/">',
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">',
    `<rdf:Description rdf:about="" xmlns:Iptc4xmpExt="${IPTC_EXT}" xmlns:genbatch="${GENBATCH_NS}">`,
    `<Iptc4xmpExt:DigitalSourceType>${TRAINED_ALGORITHMIC_MEDIA}</Iptc4xmpExt:DigitalSourceType>`,
    `<Iptc4xmpExt:AISystemUsed>${escapeXml(model)}</Iptc4xmpExt:AISystemUsed>`,
    `<genbatch:model>${escapeXml(model)}</genbatch:model>`,
    `<genbatch:jobId>${escapeXml(jobId)}</genbatch:jobId>`,
    `<genbatch:itemId>${escapeXml(itemId)}</genbatch:itemId>`,
    '</rdf:Description>',
    '</rdf:RDF>',
    '</x:xmpmeta>',
    '<?xpacket end="w"?>',
  ].join('\n');
}
