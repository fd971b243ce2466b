// `node:module` for the tab: nothing loads from disk here, so a require made
// by createRequire finds nothing, as for a package that is not installed.

export function createRequire(_from: string | URL): NodeJS.Require {
  const req = (id: string) => {
    throw Object.assign(new Error(`Cannot find module '${id}' (nothing is loaded at run time in a browser tab)`), { code: 'MODULE_NOT_FOUND' })
  }
  return Object.assign(req, { resolve: req, cache: {}, extensions: {}, main: undefined }) as unknown as NodeJS.Require
}
export const builtinModules: string[] = []
export const isBuiltin = () => false
export default { createRequire, builtinModules, isBuiltin }
