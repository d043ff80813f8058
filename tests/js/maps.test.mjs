// A map's state as the tools read it from CODAP's saved form (tools/maps.js).
import assert from "node:assert/strict";
import test from "node:test";

import { mapStateOf, mapText } from "../../core/codap_relay/plugin/js/tools/maps.js";

const layer = { _links_: { context: { id: 7 } }, pointsShouldBeVisible: true };

test("a map CODAP has not drawn yet gives no centre or zoom, and says it is fitted as it is drawn", () => {
  // the world view CODAP saves before it draws and fits a new map, which no one sees
  const state = mapStateOf({ mapModelStorage: { center: { lat: 0, lng: 0 }, zoom: -1, layerModels: [layer] } });
  assert.equal(state.center, null);
  assert.equal(state.zoom, null);
  const text = mapText(state, null);
  assert.match(text, /not drawn yet \(CODAP fits it to its points as it draws it/);
  assert.doesNotMatch(text, /centre 0|zoom -1/);
});

test("a drawn map gives its centre and zoom, a world view at zoom 0 too", () => {
  const state = mapStateOf({ mapModelStorage: { center: { lat: 41.05, lng: -88.04 }, zoom: 4.321, layerModels: [layer] } });
  assert.deepEqual([state.center, state.zoom], [{ latitude: 41.05, longitude: -88.04 }, 4.321]);
  assert.match(mapText(state, "band"), /^centre 41\.050, -88\.040, zoom 4\.32, points coloured by band/);
  const world = mapStateOf({ mapModelStorage: { center: { lat: -0.7, lng: 0 }, zoom: 0, layerModels: [] } });
  assert.equal(world.zoom, 0);
  assert.doesNotMatch(mapText(world, null), /not drawn/);
});
