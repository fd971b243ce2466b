// `node:string_decoder` for the tab: the string_decoder package (Node's own, as a library).

import sd from 'string_decoder'

export const StringDecoder = (sd as { StringDecoder: typeof import('node:string_decoder').StringDecoder }).StringDecoder
export default { StringDecoder }
