// `oxfmt` (a native code formatter) in the tab: zero-cache's query inspector
// formats the queries it prints inside a try and prints them unformatted when
// formatting fails, which is what it does here.

export async function format(): Promise<never> {
  throw new Error('oxfmt is native code; not available in a browser tab')
}
