// (filled in by its family's work)

export function createCaseTools(_ctx) {
  return {};
}
