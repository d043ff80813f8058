// (filled in by its family's work)

export function createAnalysisTools(_ctx) {
  return {};
}
