// An in-memory EIP-3009 token (USDC's FiatToken v2 rules) behind the FacilitatorEvmSigner interface
// of @x402/evm, so the real `exact` facilitator scheme verifies and settles against it: balances,
// signature recovery over the token's EIP-712 domain, nonce reuse and the validity window are
// enforced as the contract enforces them, with its revert messages (which @x402/evm maps to its
// error reasons). Beside it, Permit2 and x402's `upto` Permit2 proxy, so the real `upto` scheme settles
// a signed maximum for the amount used: every holder has approved Permit2 already (a faucet-funded
// address needs no approval transaction), and the proxy enforces the permit's signature, nonce,
// deadline, start, facilitator and ceiling. Lives in scripts/: the server never uses it.
import {
  decodeFunctionData,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionResult,
  getAddress,
  isAddressEqual,
  keccak256,
  recoverTypedDataAddress,
  serializeSignature,
  toHex,
  verifyTypedData,
  type Hex,
  type Log,
} from "viem";
import {
  authorizationTypes,
  eip3009ABI,
  erc20AllowanceAbi,
  PERMIT2_ADDRESS,
  uptoPermit2WitnessTypes,
  x402UptoPermit2ProxyABI,
  x402UptoPermit2ProxyAddress,
} from "@x402/evm";
import type { FacilitatorEvmSigner } from "@x402/evm";

const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
const MAX_UINT256 = 2n ** 256n - 1n;
/** Every call a multicall may carry, decoded by selector. */
const READABLE_ABI = [...eip3009ABI, ...erc20AllowanceAbi, ...x402UptoPermit2ProxyABI];

/** The arguments of the upto proxy's settle(permit, amount, owner, witness, signature). */
type UptoSettleArgs = [
  { permitted: { token: Hex; amount: bigint }; nonce: bigint; deadline: bigint },
  bigint,
  Hex,
  { to: Hex; facilitator: Hex; validAfter: bigint },
  Hex,
];
const TRANSFER_EVENT = [
  {
    type: "event",
    name: "Transfer",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  },
] as const;

/** FiatToken v2's events of an authorization's nonce: used by a transfer, or canceled by its signer. */
export const AUTHORIZATION_EVENTS = [
  {
    type: "event",
    name: "AuthorizationUsed",
    inputs: [
      { name: "authorizer", type: "address", indexed: true },
      { name: "nonce", type: "bytes32", indexed: true },
    ],
  },
  {
    type: "event",
    name: "AuthorizationCanceled",
    inputs: [
      { name: "authorizer", type: "address", indexed: true },
      { name: "nonce", type: "bytes32", indexed: true },
    ],
  },
] as const;

const CANCEL_AUTHORIZATION_TYPES = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

class Revert extends Error {}

export interface TokenOptions {
  /** The token contract's address (Base USDC by default). */
  address?: Hex;
  chainId?: number;
  name?: string;
  version?: string;
  /** The facilitator's own account, which submits transferWithAuthorization. */
  relayer?: Hex;
  /** Block time in unix seconds. */
  now?: () => bigint;
}

interface Receipt {
  status: "success" | "reverted";
  logs: Log[];
}

export interface Transfer {
  from: string;
  to: string;
  value: bigint;
  nonce: string;
  hash: Hex;
}

export class Eip3009Token implements FacilitatorEvmSigner {
  readonly address: Hex;
  readonly chainId: number;
  readonly name: string;
  readonly version: string;
  readonly relayer: Hex;
  readonly now: () => bigint;
  readonly transfers: Transfer[] = [];
  /** Every event the token emitted, in block order (eth_getLogs reads them). */
  readonly logs: Log[] = [];
  private readonly balances = new Map<string, bigint>();
  private readonly used = new Set<string>();
  /** Permit2 nonces spent, as owner:nonce. */
  private readonly permit2Used = new Set<string>();
  private readonly receipts = new Map<string, Receipt>();
  private block = 1n;

  constructor(options: TokenOptions = {}) {
    this.address = getAddress(options.address ?? "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    this.chainId = options.chainId ?? 8453;
    this.name = options.name ?? "USD Coin";
    this.version = options.version ?? "2";
    this.relayer = getAddress(options.relayer ?? "0x000000000000000000000000000000000000fAc1");
    this.now = options.now ?? (() => BigInt(Math.floor(Date.now() / 1000)));
  }

  /** The faucet: credits `amount` atomic units and returns the new balance. */
  mint(address: string, amount: bigint): bigint {
    const key = address.toLowerCase();
    const balance = (this.balances.get(key) ?? 0n) + amount;
    this.balances.set(key, balance);
    return balance;
  }

  balanceOf(address: string): bigint {
    return this.balances.get(address.toLowerCase()) ?? 0n;
  }

  authorizationState(authorizer: string, nonce: string): boolean {
    return this.used.has(`${authorizer}:${nonce}`.toLowerCase());
  }

  getAddresses(): readonly Hex[] {
    return [this.relayer];
  }

  /** The token, Multicall3, Permit2 and the upto proxy are contracts; every other account is an ordinary key (no code). */
  async getCode({ address }: { address: Hex }): Promise<Hex> {
    const contracts = [this.address, MULTICALL3, PERMIT2_ADDRESS, x402UptoPermit2ProxyAddress] as Hex[];
    return contracts.some((c) => isAddressEqual(address, c)) ? "0x60806040" : "0x";
  }

  async verifyTypedData(args: Parameters<FacilitatorEvmSigner["verifyTypedData"]>[0]): Promise<boolean> {
    return await verifyTypedData(args as Parameters<typeof verifyTypedData>[0]);
  }

  async readContract({ address, functionName, args = [] }: { address: Hex; abi: readonly unknown[]; functionName: string; args?: readonly unknown[] }): Promise<unknown> {
    if (isAddressEqual(address, MULTICALL3) && functionName === "tryAggregate") {
      const calls = args[1] as Array<{ target: Hex; callData: Hex }>;
      return await Promise.all(calls.map((call) => this.aggregated(call)));
    }
    if (isAddressEqual(address, x402UptoPermit2ProxyAddress)) return await this.proxyCall(functionName, args, this.relayer);
    if (!isAddressEqual(address, this.address)) throw new Revert("execution reverted: no contract at this address");
    return await this.call(functionName, args);
  }

  async writeContract({ address, functionName, args }: { address: Hex; abi: readonly unknown[]; functionName: string; args: readonly unknown[] }): Promise<Hex> {
    if (isAddressEqual(address, x402UptoPermit2ProxyAddress) && functionName === "settle") return await this.settleUpto(args as unknown as UptoSettleArgs);
    if (!isAddressEqual(address, this.address) || functionName !== "transferWithAuthorization") {
      throw new Revert(`execution reverted: unsupported call ${functionName}`);
    }
    const t = await this.checkAuthorization(args);
    this.used.add(`${t.from}:${t.nonce}`.toLowerCase());
    this.balances.set(t.from.toLowerCase(), this.balanceOf(t.from) - t.value);
    this.mint(t.to, t.value);
    // FiatToken v2 emits AuthorizationUsed before the Transfer, in the same transaction
    const used = encodeEventTopics({ abi: AUTHORIZATION_EVENTS, eventName: "AuthorizationUsed", args: { authorizer: t.from, nonce: t.nonce } }) as [Hex, ...Hex[]];
    return this.recordTransfer(t.from, t.to, t.value, t.nonce, keccak256(toHex(`${this.chainId}:${t.from}:${t.nonce}`.toLowerCase())), [used]);
  }

  /**
   * FiatToken v2's cancelAuthorization: the authorizer signs CancelAuthorization(authorizer, nonce)
   * over the token's domain, and the nonce can never be used; emits AuthorizationCanceled.
   */
  async cancelAuthorization(authorizer: Hex, nonce: Hex, signature: Hex): Promise<Hex> {
    if (this.authorizationState(authorizer, nonce)) throw new Revert("FiatTokenV2: authorization is used or canceled");
    const signer = await recoverTypedDataAddress({
      domain: { name: this.name, version: this.version, chainId: this.chainId, verifyingContract: this.address },
      types: CANCEL_AUTHORIZATION_TYPES,
      primaryType: "CancelAuthorization",
      message: { authorizer, nonce },
      signature,
    }).catch(() => undefined);
    if (!signer || !isAddressEqual(signer, authorizer)) throw new Revert("FiatTokenV2: invalid signature");
    this.used.add(`${authorizer}:${nonce}`.toLowerCase());
    const hash = keccak256(toHex(`${this.chainId}:cancel:${authorizer}:${nonce}`.toLowerCase()));
    const topics = encodeEventTopics({ abi: AUTHORIZATION_EVENTS, eventName: "AuthorizationCanceled", args: { authorizer, nonce } }) as [Hex, ...Hex[]];
    const block = this.block++;
    const log = this.logAt(block, hash, 0, topics, "0x");
    this.logs.push(log);
    this.receipts.set(hash, { status: "success", logs: [log] });
    return hash;
  }

  /** The newest block. */
  blockNumber(): bigint {
    return this.block - 1n;
  }

  /** eth_getLogs: the token's events in [fromBlock, toBlock] whose topics match (null: any). */
  getLogs(filter: { fromBlock: bigint; toBlock: bigint; topics: Array<Hex | null> }): Log[] {
    return this.logs.filter(
      (l) =>
        l.blockNumber! >= filter.fromBlock &&
        l.blockNumber! <= filter.toBlock &&
        filter.topics.every((t, i) => t === null || l.topics[i]?.toLowerCase() === t.toLowerCase()),
    );
  }

  private logAt(block: bigint, hash: Hex, logIndex: number, topics: [Hex, ...Hex[]], data: Hex): Log {
    return {
      address: this.address,
      topics,
      data,
      blockNumber: block,
      blockHash: keccak256(toHex(`block:${block}`)),
      logIndex,
      transactionHash: hash,
      transactionIndex: 0,
      removed: false,
    };
  }

  /** Upto: moves the amount used (at most the permitted maximum) from the owner to the witness's recipient. */
  private async settleUpto(args: UptoSettleArgs): Promise<Hex> {
    const { owner, to, amount, nonce } = await this.checkUptoSettle(args, this.relayer);
    this.permit2Used.add(`${owner}:${nonce}`.toLowerCase());
    this.balances.set(owner.toLowerCase(), this.balanceOf(owner) - amount);
    this.mint(to, amount);
    const tag = toHex(nonce, { size: 32 });
    return this.recordTransfer(owner, to, amount, tag, keccak256(toHex(`${this.chainId}:permit2:${owner}:${nonce}`.toLowerCase())));
  }

  private recordTransfer(from: Hex, to: Hex, value: bigint, nonce: Hex, hash: Hex, before: Array<[Hex, ...Hex[]]> = []): Hex {
    const t = { from, to, value, nonce };
    const block = this.block++;
    const transfer = encodeEventTopics({ abi: TRANSFER_EVENT, eventName: "Transfer", args: { from: t.from, to: t.to } }) as [Hex, ...Hex[]];
    const logs = [
      ...before.map((topics, i) => this.logAt(block, hash, i, topics, "0x")),
      this.logAt(block, hash, before.length, transfer, encodeAbiParameters([{ type: "uint256" }], [t.value])),
    ];
    this.logs.push(...logs);
    this.receipts.set(hash, { status: "success", logs });
    this.transfers.push({ from: t.from.toLowerCase(), to: t.to.toLowerCase(), value: t.value, nonce: t.nonce.toLowerCase(), hash });
    return hash;
  }

  async sendTransaction(): Promise<Hex> {
    throw new Revert("execution reverted: plain transactions are not supported by this token ledger");
  }

  async waitForTransactionReceipt({ hash }: { hash: Hex }): Promise<Receipt> {
    const receipt = this.receipts.get(hash);
    if (!receipt) throw new Error(`Transaction receipt with hash "${hash}" could not be found`);
    return receipt;
  }

  /** The upto proxy's reads: PERMIT2, and settle as an eth_call (the checks without the effects). */
  private async proxyCall(functionName: string, args: readonly unknown[], sender: Hex): Promise<unknown> {
    if (functionName === "PERMIT2") return getAddress(PERMIT2_ADDRESS);
    if (functionName === "settle") {
      await this.checkUptoSettle(args as unknown as UptoSettleArgs, sender);
      return undefined;
    }
    throw new Revert(`execution reverted: unknown function ${functionName}`);
  }

  /** The proxy's and Permit2's checks of an upto settlement, in their order, with their error names. */
  private async checkUptoSettle(args: UptoSettleArgs, sender: Hex): Promise<{ owner: Hex; to: Hex; amount: bigint; nonce: bigint }> {
    const [permit, amount, owner, witness, signature] = args;
    const now = this.now();
    if (!isAddressEqual(witness.facilitator, sender)) throw new Revert("execution reverted: UnauthorizedFacilitator()");
    if (amount > permit.permitted.amount) throw new Revert("execution reverted: AmountExceedsPermitted()");
    if (now < witness.validAfter) throw new Revert("execution reverted: PaymentTooEarly()");
    if (!isAddressEqual(permit.permitted.token, this.address)) throw new Revert("execution reverted: InvalidDestination()");
    if (now > permit.deadline) throw new Revert("execution reverted: SignatureExpired()");
    if (this.permit2Used.has(`${owner}:${permit.nonce}`.toLowerCase())) throw new Revert("execution reverted: InvalidNonce()");
    const valid = await verifyTypedData({
      address: owner,
      domain: { name: "Permit2", chainId: this.chainId, verifyingContract: PERMIT2_ADDRESS as Hex },
      types: uptoPermit2WitnessTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: { permitted: permit.permitted, spender: getAddress(x402UptoPermit2ProxyAddress), nonce: permit.nonce, deadline: permit.deadline, witness },
      signature,
    }).catch(() => false);
    if (!valid) throw new Revert("execution reverted: InvalidSignature()");
    if (this.balanceOf(owner) < amount) throw new Revert("ERC20: transfer amount exceeds balance");
    return { owner: getAddress(owner), to: getAddress(witness.to), amount, nonce: permit.nonce };
  }

  private async call(functionName: string, args: readonly unknown[]): Promise<unknown> {
    switch (functionName) {
      case "transferWithAuthorization":
        await this.checkAuthorization(args); // eth_call: the checks without the effects
        return undefined;
      case "balanceOf":
        return this.balanceOf(String(args[0]));
      case "name":
        return this.name;
      case "version":
        return this.version;
      case "authorizationState":
        return this.authorizationState(String(args[0]), String(args[1]));
      case "allowance":
        // every holder has approved Permit2 for everything: no approval transaction is needed
        return isAddressEqual(String(args[1]) as Hex, PERMIT2_ADDRESS as Hex) ? MAX_UINT256 : 0n;
      default:
        throw new Revert(`execution reverted: unknown function ${functionName}`);
    }
  }

  private async aggregated(call: { target: Hex; callData: Hex }): Promise<{ success: boolean; returnData: Hex }> {
    try {
      const proxy = isAddressEqual(call.target, x402UptoPermit2ProxyAddress);
      if (!proxy && !isAddressEqual(call.target, this.address)) return { success: false, returnData: "0x" };
      const { functionName, args } = decodeFunctionData({ abi: READABLE_ABI, data: call.callData });
      const result = proxy ? await this.proxyCall(functionName, args ?? [], this.relayer) : await this.call(functionName, args ?? []);
      return { success: true, returnData: encodeFunctionResult({ abi: READABLE_ABI, functionName, result } as Parameters<typeof encodeFunctionResult>[0]) };
    } catch {
      return { success: false, returnData: "0x" };
    }
  }

  /** FiatToken v2's transferWithAuthorization checks, in its order, with its revert messages. */
  private async checkAuthorization(args: readonly unknown[]): Promise<{ from: Hex; to: Hex; value: bigint; nonce: Hex }> {
    const [from, to, value, validAfter, validBefore, nonce] = args as [Hex, Hex, bigint, bigint, bigint, Hex];
    const now = this.now();
    if (!(now > BigInt(validAfter))) throw new Revert("FiatTokenV2: authorization is not yet valid");
    if (!(now < BigInt(validBefore))) throw new Revert("FiatTokenV2: authorization is expired");
    if (this.authorizationState(from, nonce)) throw new Revert("FiatTokenV2: authorization is used or canceled");
    let signature: Hex;
    if (args.length === 7) signature = args[6] as Hex;
    else {
      const [v, r, s] = args.slice(6) as [number | bigint, Hex, Hex];
      signature = BigInt(v) >= 27n ? serializeSignature({ r, s, v: BigInt(v) }) : serializeSignature({ r, s, yParity: Number(v) });
    }
    let signer: Hex;
    try {
      signer = await recoverTypedDataAddress({
        domain: { name: this.name, version: this.version, chainId: this.chainId, verifyingContract: this.address },
        types: authorizationTypes,
        primaryType: "TransferWithAuthorization",
        message: { from, to, value: BigInt(value), validAfter: BigInt(validAfter), validBefore: BigInt(validBefore), nonce },
        signature,
      });
    } catch {
      throw new Revert("FiatTokenV2: invalid signature");
    }
    if (!isAddressEqual(signer, from)) throw new Revert("FiatTokenV2: invalid signature");
    if (this.balanceOf(from) < BigInt(value)) throw new Revert("ERC20: transfer amount exceeds balance");
    return { from: getAddress(from), to: getAddress(to), value: BigInt(value), nonce };
  }
}
