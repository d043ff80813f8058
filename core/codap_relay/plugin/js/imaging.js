// @ts-check
// Pictures of graphs for the model. CODAP hands the plugin a PNG (a data URI) as large as the graph on screen
// times the screen's pixel ratio. A model needs far less, and the picture must stay well inside the relay's limit
// for one image and what MCP clients accept, so `fit` keeps CODAP's own PNG when it is small enough and otherwise
// scales it down on a canvas, then, if a PNG is still too large, re-encodes it as JPEG, smaller each round.
//
// The decisions are plain code over a `raster` (decode a picture, encode one at a size); the browser's raster is
// a canvas, and tests give their own.

import { ToolError } from "./errors.js";

/**
 * Decodes a picture and encodes one at a size (base64, no data: prefix): a canvas in the browser, fakes in tests.
 * @template [P={width: number, height: number}]
 * @typedef {object} Raster
 * @property {(dataUri: string) => Promise<P & {width: number, height: number}>} decode
 * @property {(picture: P, width: number, height: number, mimeType: string, quality: number | undefined) =>
 *   Promise<string>} encode
 */

/**
 * A picture fitted for the model, and what CODAP gave.
 * @typedef {object} FittedPicture
 * @property {string} mimeType
 * @property {string} base64
 * @property {number} width
 * @property {number} height
 * @property {number} bytes
 * @property {{width: number, height: number, bytes: number}} original
 * @property {boolean} scaled
 * @property {boolean} reencoded
 */

export const DEFAULT_MAX_SIZE = 1024; // pixels on the longer side
export const MAX_IMAGE_BYTES = 1_000_000; // the relay accepts 1,500,000 per image: room to spare
const SMALLEST = 64; // never shrink below this many pixels on the longer side
const JPEG_QUALITY = 0.85;
const SHRINK = 0.75; // each further round when even a JPEG is too large

/**
 * {mimeType, base64} of a base64 data URI, else null.
 * @param {unknown} uri
 */
export function parseDataUri(uri) {
  const match = /^data:(image\/[a-z+.-]+);base64,([A-Za-z0-9+/]*={0,2})$/.exec(typeof uri === "string" ? uri : "");
  return match ? { mimeType: match[1], base64: match[2] } : null;
}

/**
 * How many bytes a base64 text decodes to.
 * @param {string} text
 */
export function base64Bytes(text) {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length / 4) * 3 - padding;
}

/**
 * Fit CODAP's picture to `maxSize` pixels (longer side) and `maxBytes`. Resolves with {mimeType, base64, width,
 * height, bytes, original: {width, height, bytes}, scaled, reencoded}.
 * @param {string} dataUri
 * @param {{maxSize?: number, maxBytes?: number, raster: Raster<any>}} options
 * @returns {Promise<FittedPicture>}
 */
export async function fitPicture(dataUri, { maxSize = DEFAULT_MAX_SIZE, maxBytes = MAX_IMAGE_BYTES, raster }) {
  const parsed = parseDataUri(dataUri);
  if (!parsed) throw new ToolError("CODAP's picture of the graph was not an image.", "graph_image_unavailable");
  const picture = await raster.decode(dataUri);
  const { width, height } = picture;
  if (!(width > 0 && height > 0)) {
    throw new ToolError(
      "CODAP gave an empty picture of the graph (0 pixels). A minimized or hidden graph is not drawn: show it at " +
        "its full size, then ask again.",
      "graph_image_unavailable",
    );
  }
  const original = { width, height, bytes: base64Bytes(parsed.base64) };
  const longer = Math.max(width, height);
  if (longer <= maxSize && original.bytes <= maxBytes) {
    return { ...parsed, width, height, bytes: original.bytes, original, scaled: false, reencoded: false };
  }
  let scale = Math.min(1, maxSize / longer);
  for (;;) {
    const w = Math.max(1, Math.round(width * scale));
    const h = Math.max(1, Math.round(height * scale));
    /** @type {Array<[string, number | undefined]>} */
    const encodings = [["image/png", undefined], ["image/jpeg", JPEG_QUALITY]];
    for (const [mimeType, quality] of encodings) {
      const base64 = await raster.encode(picture, w, h, mimeType, quality);
      const bytes = base64Bytes(base64);
      if (bytes <= maxBytes) {
        return { mimeType, base64, width: w, height: h, bytes, original, scaled: scale < 1, reencoded: mimeType !== parsed.mimeType };
      }
    }
    if (Math.max(w, h) <= SMALLEST) {
      throw new ToolError(
        `The picture of the graph stays larger than ${maxBytes} bytes even at ${w} × ${h} px.`,
        "graph_image_unavailable",
      );
    }
    scale *= SHRINK;
  }
}

/**
 * The browser's raster: an <img> to decode, a canvas to draw and encode.
 * @returns {Raster<{img: HTMLImageElement, width: number, height: number}>}
 */
export function canvasRaster(doc = globalThis.document) {
  return {
    async decode(dataUri) {
      const img = new Image();
      img.src = dataUri;
      try {
        await img.decode();
      } catch {
        throw new ToolError("CODAP's picture of the graph could not be read as an image.", "graph_image_unavailable");
      }
      return { img, width: img.naturalWidth, height: img.naturalHeight };
    },
    async encode(picture, width, height, mimeType, quality) {
      const canvas = doc.createElement("canvas");
      canvas.width = width;
      canvas.height = height;
      const ctx = canvas.getContext("2d");
      if (!ctx) throw new ToolError("This browser cannot draw pictures (no 2D canvas).", "graph_image_unavailable");
      ctx.fillStyle = "#ffffff"; // JPEG has no transparency: what is see-through becomes white, not black
      ctx.fillRect(0, 0, width, height);
      ctx.imageSmoothingEnabled = true;
      ctx.imageSmoothingQuality = "high";
      ctx.drawImage(picture.img, 0, 0, width, height);
      const url = canvas.toDataURL(mimeType, quality);
      const parsed = parseDataUri(url);
      if (!parsed || parsed.mimeType !== mimeType) {
        throw new ToolError(`This browser cannot encode ${mimeType} pictures.`, "graph_image_unavailable");
      }
      return parsed.base64;
    },
  };
}
