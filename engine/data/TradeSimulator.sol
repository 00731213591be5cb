// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// The buy/sell (honeypot) simulation of `/v1/check/address`. This contract is never
/// deployed: its runtime code is put at a throwaway address by the state override of one
/// `eth_call`, so nothing here touches the chain.
///
/// One call does everything at the pinned block: finds the Uniswap V2 pair of the token
/// with WETH, buys a small amount of the token for ETH through the router, then sells all
/// it received back for ETH. Each step compares what arrived with the router's
/// `getAmountsOut` quote taken just before it (the difference is the token's transfer
/// tax) and catches its own revert, so a token that cannot be sold still answers.
///
/// The token is hostile code: every call into it is a low-level call whose answer is
/// checked before use, so no answer of the token can make this contract revert.
///
/// Rebuild the committed runtime code after editing: `node engine/data/build-trade-simulator.js`.
contract TradeSimulator {
    /// The simulation ran (both steps tried as far as the buy allowed).
    uint8 constant RAN = 0;
    /// No code at the factory address.
    uint8 constant NO_FACTORY = 1;
    /// No code at the router address.
    uint8 constant NO_ROUTER = 2;
    /// The factory knows no pair of the token with WETH.
    uint8 constant NO_PAIR = 3;
    /// The pair holds no liquidity (or too little to trade).
    uint8 constant NO_LIQUIDITY = 4;

    struct Result {
        uint8 status;
        address pair;
        uint256 reserveWeth;
        uint256 reserveToken;
        uint256 amountIn;
        bool buyOk;
        uint256 buyExpected;
        uint256 buyReceived;
        uint256 buyGas;
        bool sellTried;
        bool sellOk;
        uint256 sellAmount;
        uint256 sellExpected;
        uint256 sellReceived;
        uint256 sellGas;
    }

    receive() external payable {}

    /// Buys with at most `maxIn` wei (and at most 1% of the pool's WETH), then sells back.
    function simulate(address factory, address router, address weth, address token, uint256 maxIn)
        external
        returns (Result memory r)
    {
        if (factory.code.length == 0) {
            r.status = NO_FACTORY;
            return r;
        }
        if (router.code.length == 0) {
            r.status = NO_ROUTER;
            return r;
        }
        (bool ok, bytes memory data) = factory.staticcall(abi.encodeWithSignature("getPair(address,address)", token, weth));
        if (!ok || data.length < 32) {
            r.status = NO_PAIR;
            return r;
        }
        r.pair = abi.decode(data, (address));
        if (r.pair == address(0) || r.pair.code.length == 0) {
            r.status = NO_PAIR;
            return r;
        }
        (ok, data) = r.pair.staticcall(abi.encodeWithSignature("getReserves()"));
        if (!ok || data.length < 64) {
            r.status = NO_LIQUIDITY;
            return r;
        }
        (uint256 reserve0, uint256 reserve1) = abi.decode(data, (uint256, uint256));
        // Uniswap V2 sorts the pair's tokens by address.
        (r.reserveWeth, r.reserveToken) = weth < token ? (reserve0, reserve1) : (reserve1, reserve0);
        r.amountIn = r.reserveWeth / 100 < maxIn ? r.reserveWeth / 100 : maxIn;
        if (r.amountIn == 0 || r.reserveToken == 0 || address(this).balance < r.amountIn) {
            r.status = NO_LIQUIDITY;
            return r;
        }

        address[] memory path = new address[](2);
        path[0] = weth;
        path[1] = token;
        r.buyExpected = quote(router, r.amountIn, path);
        uint256 before = balanceOf(token);
        uint256 gasBefore = gasleft();
        try IRouter(router).swapExactETHForTokensSupportingFeeOnTransferTokens{value: r.amountIn}(
            0, path, address(this), block.timestamp
        ) {
            r.buyGas = gasBefore - gasleft();
            r.buyOk = true;
            uint256 afterBuy = balanceOf(token);
            r.buyReceived = afterBuy > before ? afterBuy - before : 0;
        } catch {
            r.buyGas = gasBefore - gasleft();
        }
        if (!r.buyOk || r.buyReceived == 0) {
            return r;
        }

        r.sellTried = true;
        r.sellAmount = r.buyReceived;
        path[0] = token;
        path[1] = weth;
        r.sellExpected = quote(router, r.sellAmount, path);
        uint256 ethBefore = address(this).balance;
        gasBefore = gasleft();
        // A token that refuses the approval cannot be sold through the router either.
        (ok, data) = token.call(abi.encodeWithSignature("approve(address,uint256)", router, r.sellAmount));
        if (!ok || (data.length > 0 && (data.length < 32 || abi.decode(data, (uint256)) == 0))) {
            r.sellGas = gasBefore - gasleft();
            return r;
        }
        try IRouter(router).swapExactTokensForETHSupportingFeeOnTransferTokens(
            r.sellAmount, 0, path, address(this), block.timestamp
        ) {
            r.sellGas = gasBefore - gasleft();
            r.sellOk = true;
            r.sellReceived = address(this).balance > ethBefore ? address(this).balance - ethBefore : 0;
        } catch {
            r.sellGas = gasBefore - gasleft();
        }
    }

    /// The router's quote for the last hop of `path`; 0 when it cannot quote.
    function quote(address router, uint256 amountIn, address[] memory path) private view returns (uint256) {
        (bool ok, bytes memory data) =
            router.staticcall(abi.encodeWithSignature("getAmountsOut(uint256,address[])", amountIn, path));
        // uint256[] of two: offset, length, two words.
        if (!ok || data.length < 128) {
            return 0;
        }
        uint256[] memory amounts = abi.decode(data, (uint256[]));
        return amounts.length == path.length ? amounts[amounts.length - 1] : 0;
    }

    /// This contract's balance of `token`; 0 when the token does not answer.
    function balanceOf(address token) private view returns (uint256) {
        (bool ok, bytes memory data) = token.staticcall(abi.encodeWithSignature("balanceOf(address)", address(this)));
        if (!ok || data.length < 32) {
            return 0;
        }
        return abi.decode(data, (uint256));
    }
}

interface IRouter {
    function swapExactETHForTokensSupportingFeeOnTransferTokens(
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external payable;

    function swapExactTokensForETHSupportingFeeOnTransferTokens(
        uint256 amountIn,
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external;
}
